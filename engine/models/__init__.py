"""Where models come from and what they are: the offline store, GGUF import, the dtype
policy, the description the notebook shows, and the tiny reasoner test asset.

Private modules; ``mlx_notebook.engine`` exports the public names.
"""
