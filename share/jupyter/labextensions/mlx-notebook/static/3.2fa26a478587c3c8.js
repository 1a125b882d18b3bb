"use strict";(self.rspackChunkmlx_notebook=self.rspackChunkmlx_notebook||[]).push([[3],{22(e,o,n){var r=n(20),t=n.n(r),a=n(21),l=(n.n(a))()(t());l.push([e.id,`/* The look of one chat turn, shared by the live widget (ChatView) and the static text/html.
   JupyterLab theme variables first, plain colours as fallbacks (VS Code, nbviewer). */
.mlxnb-turn {
  font-family: var(--jp-content-font-family, system-ui, sans-serif);
  font-size: var(--jp-content-font-size1, 14px);
  color: var(--jp-content-font-color1, #1f2328);
  border: 1px solid var(--jp-border-color2, #d0d7de);
  border-radius: 6px;
  padding: 8px 12px;
  max-width: 900px;
  line-height: 1.5;
  overflow-wrap: anywhere;  /* a long URL or base64 run wraps instead of leaving the card */
}
.mlxnb-header { display: flex; align-items: center; gap: 8px; font-size: 12px;
  color: var(--jp-ui-font-color2, #57606a); margin-bottom: 4px; }
.mlxnb-header > span { min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.mlxnb-header > .mlxnb-status { flex-shrink: 0; }
.mlxnb-model { font-weight: 600; color: var(--jp-ui-font-color1, #1f2328); }
.mlxnb-status { border-radius: 10px; padding: 0 8px; background: var(--jp-layout-color2, #eaeef2); }
.mlxnb-status-stopped, .mlxnb-status-length { background: #fff1cc; color: #7a5b00; }
.mlxnb-status-error { background: #ffe0e0; color: #a40e26; }
.mlxnb-spacer { flex: 1; }
.mlxnb-reasoning { margin: 4px 0 8px; border-left: 3px solid #c6b5f5; padding-left: 8px;
  color: var(--jp-content-font-color2, #57606a); }
.mlxnb-reasoning > summary { cursor: pointer; font-size: 12px; user-select: none; }
.mlxnb-reasoning-body { white-space: pre-wrap; font-size: 13px; margin-top: 4px; }
.mlxnb-tool { border: 1px solid var(--jp-border-color2, #d0d7de); border-radius: 6px;
  margin: 6px 0; padding: 6px 8px; background: var(--jp-layout-color1, #f6f8fa); }
.mlxnb-tool-name { font-family: var(--jp-code-font-family, monospace); font-weight: 600; }
.mlxnb-tool-label { font-size: 11px; text-transform: uppercase; letter-spacing: .04em;
  color: var(--jp-ui-font-color2, #57606a); margin-top: 4px; }
/* max-height: a tool's result (or a model's argument) can run to pages; it scrolls inside the
   card rather than burying the reply that follows. */
.mlxnb-tool pre { margin: 2px 0; white-space: pre-wrap; word-break: break-word;
  font-family: var(--jp-code-font-family, monospace); font-size: 12px;
  max-height: 24em; overflow: auto; }
.mlxnb-tool-error { color: #a40e26; }
.mlxnb-tool-pending { color: var(--jp-ui-font-color2, #57606a); font-style: italic; font-size: 12px; }
.mlxnb-content p { margin: 0 0 8px; }
.mlxnb-content :last-child { margin-bottom: 0; }
.mlxnb-content code { font-family: var(--jp-code-font-family, monospace); font-size: 0.92em;
  background: var(--jp-layout-color2, #eff1f3); padding: 0 3px; border-radius: 3px; }
.mlxnb-content pre.mlxnb-code { background: var(--jp-cell-editor-background, #f6f8fa);
  border-radius: 6px; padding: 8px; overflow-x: auto; }
.mlxnb-content pre.mlxnb-code code { background: none; padding: 0; }
.mlxnb-content blockquote { margin: 0 0 8px; padding-left: 10px;
  border-left: 3px solid var(--jp-border-color1, #d0d7de); }
.mlxnb-error { color: #a40e26; background: #fff5f5; border-radius: 4px; padding: 4px 8px; margin: 6px 0; }
.mlxnb-tools-offered { font-size: 12px; color: var(--jp-ui-font-color2, #57606a); margin: 2px 0; }
.mlxnb-warning { color: #7a5b00; background: #fff8e1; border-radius: 4px; padding: 2px 8px;
  margin: 4px 0; font-size: 12px; }
.mlxnb-interim p { margin: 0 0 8px; }
.mlxnb-problem { color: #7a5b00; font-size: 12px; margin: 4px 0; }
.mlxnb-footer { display: flex; flex-wrap: wrap; gap: 4px 14px; margin-top: 8px; padding-top: 6px;
  border-top: 1px solid var(--jp-border-color2, #d0d7de); font-size: 12px;
  color: var(--jp-ui-font-color2, #57606a); }
.mlxnb-footer b { font-weight: 600; color: var(--jp-ui-font-color1, #1f2328); }
/* Token view: one span per generated token, shaded by its probability. */
.mlxnb-tokens { font-family: var(--jp-code-font-family, monospace); font-size: 13px; line-height: 1.9; }
.mlxnb-token { position: relative; border-radius: 3px; padding: 1px 0; white-space: pre-wrap;
  outline: 1px solid rgba(0,0,0,.06); }
.mlxnb-token-tip { display: none; position: absolute; left: 0; top: 1.7em; z-index: 10;
  background: var(--jp-layout-color0, #fff); color: var(--jp-ui-font-color1, #1f2328);
  border: 1px solid var(--jp-border-color1, #999); border-radius: 4px; padding: 4px 6px;
  white-space: pre; font-size: 12px; line-height: 1.4; box-shadow: 0 2px 6px rgba(0,0,0,.15); }
.mlxnb-token:hover .mlxnb-token-tip { display: block; }
.mlxnb-token-tip table { border-collapse: collapse; }
.mlxnb-token-tip td { padding: 0 6px 0 0; }
.mlxnb-tool-badge { font-size: 11px; border-radius: 4px; padding: 0 5px; background: #fbefff;
  color: #8250df; border: 1px solid #d8b9ff; }
.mlxnb-tool-id { font-size: 12px; color: var(--jp-ui-font-color2, #57606a); }
.mlxnb-content table, .mlxnb-interim table { border-collapse: collapse; margin: 6px 0; }
.mlxnb-content th, .mlxnb-content td { border: 1px solid var(--jp-border-color2, #d0d7de); padding: 2px 8px; }
`,""]),n.d(o,{},{A:l})},23(e,o,n){var r=n(20),t=n.n(r),a=n(21),l=(n.n(a))()(t());l.push([e.id,`/* The MIME renderer: the turn keeps the output area's width and gets the tip on focus too. */
.mlxnb-turn-native {
  overflow: visible;
  padding: 2px 0;
}

.mlxnb-turn-native .mlxnb-token-active .mlxnb-token-tip,
.mlxnb-tokens .mlxnb-token-active .mlxnb-token-tip {
  display: block;
}

/* %%chat / %%complete: the magic line reads as a magic, like IPython's in a code cell. */
.cm-mlxnb-magic {
  color: var(--jp-mirror-editor-keyword-color, #008000);
  font-weight: bold;
}

/* The engine panel. */
.mlxnb-panel {
  padding: 8px 10px;
  overflow-y: auto;
  font-size: var(--jp-ui-font-size1);
  color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color1);
  min-width: 240px;
}

.mlxnb-panel-header {
  display: flex;
  flex-direction: column;
  margin-bottom: 6px;
}

.mlxnb-panel-title {
  font-weight: 600;
  font-size: var(--jp-ui-font-size2);
}

.mlxnb-panel-source {
  color: var(--jp-ui-font-color2);
  font-size: var(--jp-ui-font-size0);
  word-break: break-all;
}

.mlxnb-panel-actions {
  display: flex;
  gap: 6px;
  margin: 4px 0 8px;
}

.mlxnb-panel-heading {
  font-size: var(--jp-ui-font-size1);
  font-weight: 600;
  margin: 10px 0 4px;
  text-transform: uppercase;
  letter-spacing: 0.04em;
  color: var(--jp-ui-font-color2);
}

.mlxnb-panel-facts th {
  text-align: left;
  font-weight: normal;
  color: var(--jp-ui-font-color2);
  padding-right: 10px;
}

.mlxnb-panel-table {
  border-collapse: collapse;
  width: 100%;
}

.mlxnb-panel-table th,
.mlxnb-panel-table td {
  text-align: right;
  padding: 1px 4px;
}

.mlxnb-panel-table th:first-child,
.mlxnb-panel-table td:first-child {
  text-align: left;
}

.mlxnb-panel-request {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 8px;
  padding: 3px 0;
  border-bottom: 1px solid var(--jp-border-color2);
}

.mlxnb-panel-session {
  font-weight: 600;
}

.mlxnb-panel-alive-yes {
  color: var(--jp-success-color1, #2e7d32);
}

.mlxnb-panel-alive-no,
.mlxnb-panel-error {
  color: var(--jp-error-color1, #a40e26);
}

.mlxnb-panel-empty {
  color: var(--jp-ui-font-color2);
  font-style: italic;
}

.mlxnb-panel-lookups {
  margin: 4px 0 0;
  padding-left: 16px;
  color: var(--jp-ui-font-color2);
}
`,""]),n.d(o,{},{A:l})},19(e,o,n){var r=n(20),t=n.n(r),a=n(21),l=n.n(a),i=n(22),p=n(23),s=l()(t());s.i(i.A),s.i(p.A),s.push([e.id,`/* The turn's look comes from the one stylesheet Python also inlines into every turn's HTML. */
`,""]),n.d(o,{},{A:s})},21(e){e.exports=function(e){var o=[];return o.toString=function(){return this.map(function(o){var n="",r=void 0!==o[5];return o[4]&&(n+="@supports (".concat(o[4],") {")),o[2]&&(n+="@media ".concat(o[2]," {")),r&&(n+="@layer".concat(o[5].length>0?" ".concat(o[5]):""," {")),n+=e(o),r&&(n+="}"),o[2]&&(n+="}"),o[4]&&(n+="}"),n}).join("")},o.i=function(e,n,r,t,a){"string"==typeof e&&(e=[[null,e,void 0]]);var l={};if(r)for(var i=0;i<this.length;i++){var p=this[i][0];null!=p&&(l[p]=!0)}for(var s=0;s<e.length;s++){var c=[].concat(e[s]);r&&l[c[0]]||(void 0!==a&&(void 0===c[5]||(c[1]="@layer".concat(c[5].length>0?" ".concat(c[5]):""," {").concat(c[1],"}")),c[5]=a),n&&(c[2]&&(c[1]="@media ".concat(c[2]," {").concat(c[1],"}")),c[2]=n),t&&(c[4]?(c[1]="@supports (".concat(c[4],") {").concat(c[1],"}"),c[4]=t):c[4]="".concat(t)),o.push(c))}},o}},20(e){e.exports=function(e){return e[1]}},13(e){var o=[];function n(e){for(var n=-1,r=0;r<o.length;r++)if(o[r].identifier===e){n=r;break}return n}function r(e,r){for(var t={},a=[],l=0;l<e.length;l++){var i=e[l],p=r.base?i[0]+r.base:i[0],s=t[p]||0,c="".concat(p," ").concat(s);t[p]=s+1;var d=n(c),f={css:i[1],media:i[2],sourceMap:i[3],supports:i[4],layer:i[5]};if(-1!==d)o[d].references++,o[d].updater(f);else{var x=function(e,o){var n=o.domAPI(o);return n.update(e),function(o){o?(o.css!==e.css||o.media!==e.media||o.sourceMap!==e.sourceMap||o.supports!==e.supports||o.layer!==e.layer)&&n.update(e=o):n.remove()}}(f,r);r.byIndex=l,o.splice(l,0,{identifier:c,updater:x,references:1})}a.push(c)}return a}e.exports=function(e,t){var a=r(e=e||[],t=t||{});return function(e){e=e||[];for(var l=0;l<a.length;l++){var i=n(a[l]);o[i].references--}for(var p=r(e,t),s=0;s<a.length;s++){var c=n(a[s]);0===o[c].references&&(o[c].updater(),o.splice(c,1))}a=p}}},15(e){var o={};e.exports=function(e,n){var r=function(e){if(void 0===o[e]){var n=document.querySelector(e);if(window.HTMLIFrameElement&&n instanceof window.HTMLIFrameElement)try{n=n.contentDocument.head}catch(e){n=null}o[e]=n}return o[e]}(e);if(!r)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");r.appendChild(n)}},17(e){e.exports=function(e){var o=document.createElement("style");return e.setAttributes(o,e.attributes),e.insert(o,e.options),o}},16(e,o,n){e.exports=function(e){var o=n.nc;o&&e.setAttribute("nonce",o)}},14(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var o=e.insertStyleElement(e);return{update:function(n){var r,t,a;r="",n.supports&&(r+="@supports (".concat(n.supports,") {")),n.media&&(r+="@media ".concat(n.media," {")),(t=void 0!==n.layer)&&(r+="@layer".concat(n.layer.length>0?" ".concat(n.layer):""," {")),r+=n.css,t&&(r+="}"),n.media&&(r+="}"),n.supports&&(r+="}"),(a=n.sourceMap)&&"u">typeof btoa&&(r+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(a))))," */")),e.styleTagTransform(r,o,e.options)},remove:function(){var e;null===(e=o).parentNode||e.parentNode.removeChild(e)}}}},18(e){e.exports=function(e,o){if(o.styleSheet)o.styleSheet.cssText=e;else{for(;o.firstChild;)o.removeChild(o.firstChild);o.appendChild(document.createTextNode(e))}}},12(e,o,n){var r=n(13),t=n.n(r),a=n(14),l=n.n(a),i=n(15),p=n.n(i),s=n(16),c=n.n(s),d=n(17),f=n.n(d),x=n(18),m=n.n(x),b=n(19),u={};u.styleTagTransform=m(),u.setAttributes=c(),u.insert=p().bind(null,"head"),u.domAPI=l(),u.insertStyleElement=f(),t()(b.A,u),b.A&&b.A.locals&&b.A.locals}}]);