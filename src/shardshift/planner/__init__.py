"""The planner: will a setup fit, what will each step cost, which framework fits the job.

    Plan (a setup's merged Plan) + Model (shape) + Machine  ->  Layout (every number the estimates use,
    each default named)  ->  memory.estimate  ->  MemoryEstimate
                          ->  communication.per_step -> [Traffic]
                          ->  recommend.recommend -> Recommendation
    report.build(...) -> the `shardshift plan --format json` object (a contract: keys only grow)

Every figure carries the assumption it rests on (`Figure.assumption`), so a report can say why.
Nothing here imports torch, DeepSpeed or Megatron: their estimators are test oracles.
"""
