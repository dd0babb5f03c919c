"""Input data: the pretraining feature spec, dataset_info.json, the
pretraining tf.data loader, and the GLUE readers (see README.md)."""
