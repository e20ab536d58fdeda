/* The subcommands of `mtk`, one row each: MTK_CLI_COMMAND(name, summary)
 * runs `int cli_<name>(int argc, char **argv)` from src/cli/cli_<name>.c.
 * Adding a command is one row here and its file.  No include guard:
 * expanded once per use of MTK_CLI_COMMAND. */
MTK_CLI_COMMAND(eval, "evaluate a PyTorch expression on meta (or cpu) tensors")
MTK_CLI_COMMAND(ops, "list the ops mtk knows, with their signatures")
MTK_CLI_COMMAND(summary, "summarize a model: parameters, shapes and FLOPs per module")
MTK_CLI_COMMAND(models, "list the built-in models: family, class, parameter count")
MTK_CLI_COMMAND(inspect, "validate a safetensors checkpoint and list its tensors")
MTK_CLI_COMMAND(convert, "rewrite a safetensors checkpoint: dtype, shards")
MTK_CLI_COMMAND(load, "materialize a model from a safetensors checkpoint on the cpu")
MTK_CLI_COMMAND(memory, "peak memory of inference, a training step or generation; what fits")
MTK_CLI_COMMAND(place, "a device map (accelerate's device_map) under GPU, cpu and disk budgets")
MTK_CLI_COMMAND(shard, "a parallel plan: tensor/pipeline/data/expert parallel placements, memory, collectives")
MTK_CLI_COMMAND(run, "run a loaded model's forward on the cpu: logits or hidden states")
MTK_CLI_COMMAND(generate, "decode greedily with a KV cache, as generate(do_sample=False)")
