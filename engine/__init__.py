"""The mlx-notebook inference engine: model store, request path and engine thread.

Installed as ``mlx_notebook.engine``. Nothing here imports IPython, ipywidgets, anywidget or
the notebook layer above it (a test enforces it).
"""
