"""The Plan itself as YAML (`convert --to plan`): a writer only."""

from shardshift.formats.plan_yaml.writer import *  # noqa: F401,F403
