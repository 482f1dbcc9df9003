"""What feeds a training step: MNIST-format files, the user's image folders, and the loaders."""
