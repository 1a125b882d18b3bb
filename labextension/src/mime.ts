/**
 * The MIME renderer for a saved turn (`application/vnd.mlx-notebook.turn+json`).
 *
 * It draws the bundle's own `text/html`, which Python renders from the same record for every
 * viewer (mlx_notebook/display), inside an element only this renderer makes
 * (`.mlxnb-turn-native`), then wires the interactive parts, typesets math, and styles it
 * with turn.css from the extension's stylesheet (so an untrusted notebook, whose `<style>`
 * JupyterLab strips, still looks like the live widget).
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { wireTurn } from './interactivity';

export const MIME_TYPE = 'application/vnd.mlx-notebook.turn+json';
const CSS_CLASS = 'mlxnb-turn-native';

interface ITurnRecord {
  version?: number;
  content?: string;
}

export class TurnRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._options = options;
    this.addClass(CSS_CLASS);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const record = (model.data[MIME_TYPE] ?? {}) as ITurnRecord;
    const html = model.data['text/html'];
    this.node.dataset.mlxnbVersion = String(record.version ?? '');
    if (typeof html !== 'string') {
      // A bundle without its HTML copy (trimmed by a tool): the answer as plain text.
      const pre = document.createElement('pre');
      pre.textContent = String(model.data['text/plain'] ?? record.content ?? '');
      this.node.replaceChildren(pre);
      return;
    }
    this.node.innerHTML = model.trusted ? html : this._options.sanitizer.sanitize(html);
    wireTurn(this.node, this._openReasoning);
    if (this._options.latexTypesetter) {
      await this._options.latexTypesetter.typeset(this.node);
    }
  }

  private _options: IRenderMime.IRendererOptions;
  private _openReasoning = new Set<number>();
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: options => new TurnRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'mlx-notebook:turn-renderer',
  description: 'Renders saved mlx-notebook chat turns natively.',
  rendererFactory,
  // Ahead of text/html (rank 50 among the defaults): the turn record is the richer type.
  rank: 0,
  dataType: 'json'
};

export default extension;
