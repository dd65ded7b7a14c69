"""Launch scripts of every framework (torchrun, deepspeed, accelerate launch, srun, sbatch, mpirun,
python): the world they start, the config files they link and the values their command lines
override."""
