"""mlx-notebook: run and study local LLMs with MLX inside Jupyter."""
