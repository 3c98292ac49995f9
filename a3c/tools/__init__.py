"""What is done with a trained network or a run: ONNX export, videos, plots, diagnostics."""
