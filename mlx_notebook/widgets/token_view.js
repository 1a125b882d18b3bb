// Front end of mlx_notebook.widgets.BranchingTokenView: the token view the kernel rendered
// (display/_token_view.py), where clicking one of a token's alternatives asks the kernel to
// branch the reply there: {kind: "branch", at, token}.

function render({ model, el }) {
  const draw = () => {
    el.innerHTML = model.get("html");  // made by the kernel's renderer, tokens escaped
    for (const row of el.querySelectorAll("tr.mlxnb-alt")) {
      row.style.cursor = "pointer";
      row.title = "Branch the reply here with this token";
      row.addEventListener("click", (event) => {
        event.stopPropagation();
        const span = row.closest(".mlxnb-token");
        model.send({ kind: "branch", at: Number(span.dataset.at), token: row.dataset.token });
      });
    }
  };
  model.on("change:html", draw);
  draw();
  return () => model.off("change:html", draw);
}

export default { render };
