"use strict";(self.rspackChunkmlx_notebook=self.rspackChunkmlx_notebook||[]).push([[3],{22(o,e,n){var r=n(20),t=n.n(r),a=n(21),l=(n.n(a))()(t());l.push([o.id,`/* The look of one chat turn, shared by the live widget (ChatView) and the static text/html.
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
}
.mlxnb-header { display: flex; align-items: center; gap: 8px; font-size: 12px;
  color: var(--jp-ui-font-color2, #57606a); margin-bottom: 4px; }
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
.mlxnb-tool pre { margin: 2px 0; white-space: pre-wrap; word-break: break-word;
  font-family: var(--jp-code-font-family, monospace); font-size: 12px; }
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
`,""]),n.d(e,{},{A:l})},23(o,e,n){var r=n(20),t=n.n(r),a=n(21),l=(n.n(a))()(t());l.push([o.id,`/* The MIME renderer: the turn keeps the output area's width and gets the tip on focus too. */
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
`,""]),n.d(e,{},{A:l})},19(o,e,n){var r=n(20),t=n.n(r),a=n(21),l=n.n(a),i=n(22),p=n(23),c=l()(t());c.i(i.A),c.i(p.A),c.push([o.id,`/* The turn's look comes from the one stylesheet Python also inlines into every turn's HTML. */
`,""]),n.d(e,{},{A:c})},21(o){o.exports=function(o){var e=[];return e.toString=function(){return this.map(function(e){var n="",r=void 0!==e[5];return e[4]&&(n+="@supports (".concat(e[4],") {")),e[2]&&(n+="@media ".concat(e[2]," {")),r&&(n+="@layer".concat(e[5].length>0?" ".concat(e[5]):""," {")),n+=o(e),r&&(n+="}"),e[2]&&(n+="}"),e[4]&&(n+="}"),n}).join("")},e.i=function(o,n,r,t,a){"string"==typeof o&&(o=[[null,o,void 0]]);var l={};if(r)for(var i=0;i<this.length;i++){var p=this[i][0];null!=p&&(l[p]=!0)}for(var c=0;c<o.length;c++){var s=[].concat(o[c]);r&&l[s[0]]||(void 0!==a&&(void 0===s[5]||(s[1]="@layer".concat(s[5].length>0?" ".concat(s[5]):""," {").concat(s[1],"}")),s[5]=a),n&&(s[2]&&(s[1]="@media ".concat(s[2]," {").concat(s[1],"}")),s[2]=n),t&&(s[4]?(s[1]="@supports (".concat(s[4],") {").concat(s[1],"}"),s[4]=t):s[4]="".concat(t)),e.push(s))}},e}},20(o){o.exports=function(o){return o[1]}},13(o){var e=[];function n(o){for(var n=-1,r=0;r<e.length;r++)if(e[r].identifier===o){n=r;break}return n}function r(o,r){for(var t={},a=[],l=0;l<o.length;l++){var i=o[l],p=r.base?i[0]+r.base:i[0],c=t[p]||0,s="".concat(p," ").concat(c);t[p]=c+1;var d=n(s),f={css:i[1],media:i[2],sourceMap:i[3],supports:i[4],layer:i[5]};if(-1!==d)e[d].references++,e[d].updater(f);else{var x=function(o,e){var n=e.domAPI(e);return n.update(o),function(e){e?(e.css!==o.css||e.media!==o.media||e.sourceMap!==o.sourceMap||e.supports!==o.supports||e.layer!==o.layer)&&n.update(o=e):n.remove()}}(f,r);r.byIndex=l,e.splice(l,0,{identifier:s,updater:x,references:1})}a.push(s)}return a}o.exports=function(o,t){var a=r(o=o||[],t=t||{});return function(o){o=o||[];for(var l=0;l<a.length;l++){var i=n(a[l]);e[i].references--}for(var p=r(o,t),c=0;c<a.length;c++){var s=n(a[c]);0===e[s].references&&(e[s].updater(),e.splice(s,1))}a=p}}},15(o){var e={};o.exports=function(o,n){var r=function(o){if(void 0===e[o]){var n=document.querySelector(o);if(window.HTMLIFrameElement&&n instanceof window.HTMLIFrameElement)try{n=n.contentDocument.head}catch(o){n=null}e[o]=n}return e[o]}(o);if(!r)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");r.appendChild(n)}},17(o){o.exports=function(o){var e=document.createElement("style");return o.setAttributes(e,o.attributes),o.insert(e,o.options),e}},16(o,e,n){o.exports=function(o){var e=n.nc;e&&o.setAttribute("nonce",e)}},14(o){o.exports=function(o){if("u"<typeof document)return{update:function(){},remove:function(){}};var e=o.insertStyleElement(o);return{update:function(n){var r,t,a;r="",n.supports&&(r+="@supports (".concat(n.supports,") {")),n.media&&(r+="@media ".concat(n.media," {")),(t=void 0!==n.layer)&&(r+="@layer".concat(n.layer.length>0?" ".concat(n.layer):""," {")),r+=n.css,t&&(r+="}"),n.media&&(r+="}"),n.supports&&(r+="}"),(a=n.sourceMap)&&"u">typeof btoa&&(r+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(a))))," */")),o.styleTagTransform(r,e,o.options)},remove:function(){var o;null===(o=e).parentNode||o.parentNode.removeChild(o)}}}},18(o){o.exports=function(o,e){if(e.styleSheet)e.styleSheet.cssText=o;else{for(;e.firstChild;)e.removeChild(e.firstChild);e.appendChild(document.createTextNode(o))}}},12(o,e,n){var r=n(13),t=n.n(r),a=n(14),l=n.n(a),i=n(15),p=n.n(i),c=n(16),s=n.n(c),d=n(17),f=n.n(d),x=n(18),m=n.n(x),b=n(19),u={};u.styleTagTransform=m(),u.setAttributes=s(),u.insert=p().bind(null,"head"),u.domAPI=l(),u.insertStyleElement=f(),t()(b.A,u),b.A&&b.A.locals&&b.A.locals}}]);