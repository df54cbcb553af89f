"""Policy networks, the sample-factory integration, checkpoints and fine-tuning."""
