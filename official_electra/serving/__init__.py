"""SavedModels for TF Serving: the fine-tuned classifier and the op-set check."""
