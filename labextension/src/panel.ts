/**
 * The engine panel: what the current notebook's kernel engine is doing.
 *
 * One panel in the right side area follows the current notebook; each kernel keeps its own
 * `EngineConnection`, so several notebooks (and kernels) can be open at once.
 */

import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { EngineConnection } from './model';
import { ILiveRequest, IRecentRequest, ISnapshot } from './tokens';

const CSS_CLASS = 'mlxnb-panel';

function bytes(count: number | null | undefined): string {
  // The notebook's units (decimal, kB/MB/GB), as the footer and %mlx status write them.
  if (count === null || count === undefined) {
    return 'unknown';
  }
  const units: [string, number][] = [
    ['GB', 1e9],
    ['MB', 1e6],
    ['kB', 1e3]
  ];
  for (const [unit, scale] of units) {
    if (count >= scale) {
      return `${(count / scale).toFixed(1)} ${unit}`;
    }
  }
  return `${count} B`;
}

function count(value: number | null | undefined): string {
  if (value === null || value === undefined) {
    return 'unknown';
  }
  if (value >= 1e9) {
    return `${(value / 1e9).toFixed(1)}B`;
  }
  if (value >= 1e6) {
    return `${(value / 1e6).toFixed(1)}M`;
  }
  if (value >= 1e3) {
    return `${(value / 1e3).toFixed(1)}K`;
  }
  return String(value);
}

function seconds(value: number | null | undefined): string {
  if (value === null || value === undefined) {
    return '–';
  }
  return value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(2)} s`;
}

function age(value: number): string {
  if (value < 60) {
    return `${Math.round(value)} s`;
  }
  return value < 3600 ? `${Math.round(value / 60)} min` : `${(value / 3600).toFixed(1)} h`;
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export class EnginePanel extends Widget {
  constructor(trans: TranslationBundle) {
    super();
    this._trans = trans;
    this.addClass(CSS_CLASS);
    this.id = 'mlx-notebook-engine-panel';
    this.title.caption = trans.__('MLX engine');
    this.title.label = trans.__('MLX');
    this.title.closable = true;
    this.render();
  }

  /** The kernel connection the panel shows (the current notebook's), or none. */
  get connection(): EngineConnection | null {
    return this._connection;
  }

  set connection(connection: EngineConnection | null) {
    if (connection === this._connection) {
      return;
    }
    this._connection?.changed.disconnect(this.render, this);
    this._connection = connection;
    connection?.changed.connect(this.render, this);
    this.render();
  }

  /** Label of what the panel follows (the notebook's name). */
  set source(name: string) {
    this._source = name;
    this.render();
  }

  render(): void {
    const trans = this._trans;
    const node = this.node;
    node.replaceChildren();
    const header = element('div', 'mlxnb-panel-header');
    header.append(element('span', 'mlxnb-panel-title', trans.__('MLX engine')));
    if (this._source) {
      header.append(element('span', 'mlxnb-panel-source', this._source));
    }
    node.append(header);
    const connection = this._connection;
    if (!connection) {
      node.append(element('div', 'mlxnb-panel-empty', trans.__('Open a notebook to see its engine.')));
      return;
    }
    const snapshot = connection.snapshot;
    if (connection.state === 'not-loaded' || connection.state === 'no-kernel') {
      node.append(
        element(
          'div',
          'mlxnb-panel-empty mlxnb-panel-no-engine',
          trans.__('No engine: run %load_ext mlx_notebook and %load_model in this notebook.')
        )
      );
      return;
    }
    if (!snapshot) {
      node.append(element('div', 'mlxnb-panel-empty', trans.__('Connecting…')));
      return;
    }
    const actions = element('div', 'mlxnb-panel-actions');
    const stopAll = element('button', 'jp-mod-styled mlxnb-panel-stop-all', trans.__('Stop all'));
    stopAll.disabled = snapshot.live.length === 0;
    stopAll.onclick = () => connection.send('stop_all');
    const clear = element('button', 'jp-mod-styled mlxnb-panel-clear-cache', trans.__('Clear cache'));
    clear.disabled = !snapshot.engine;
    clear.onclick = () => connection.send('clear_cache');
    actions.append(stopAll, clear);
    node.append(actions);
    this._renderEngine(snapshot);
    this._renderLive(snapshot.live);
    this._renderRecent(snapshot.recent);
  }

  private _section(title: string, className: string): HTMLElement {
    const section = element('section', `mlxnb-panel-section ${className}`);
    section.append(element('h3', 'mlxnb-panel-heading', title));
    this.node.append(section);
    return section;
  }

  private _rows(section: HTMLElement, rows: [string, string][]): void {
    const table = element('table', 'mlxnb-panel-facts');
    for (const [label, value] of rows) {
      const tr = element('tr', '');
      tr.dataset.fact = label;
      tr.append(element('th', '', label), element('td', '', value));
      table.append(tr);
    }
    section.append(table);
  }

  private _renderEngine(snapshot: ISnapshot): void {
    const trans = this._trans;
    const engine = snapshot.engine;
    const model = this._section(trans.__('Model'), 'mlxnb-panel-model');
    if (!engine) {
      model.append(
        element('div', 'mlxnb-panel-empty mlxnb-panel-no-engine', trans.__('No engine: run %load_model.'))
      );
      return;
    }
    this._rows(model, [
      [trans.__('name'), engine.model.name],
      [trans.__('dtype'), engine.model.dtype ?? 'unknown'],
      [trans.__('parameters'), count(engine.model.parameters)],
      [trans.__('weights'), bytes(engine.model.memory_bytes)],
      [trans.__('MLX memory'), `${bytes(engine.memory.active_bytes)} (${trans.__('peak')} ${bytes(engine.memory.peak_bytes)})`]
    ]);
    const health = this._section(trans.__('Health'), 'mlxnb-panel-health');
    const state = element(
      'div',
      `mlxnb-panel-alive mlxnb-panel-alive-${engine.health.alive ? 'yes' : 'no'}`,
      engine.health.alive ? trans.__('alive') : trans.__('stopped')
    );
    health.append(state);
    if (engine.health.error) {
      health.append(element('div', 'mlxnb-panel-error', engine.health.error));
    }
    const cache = this._section(trans.__('Prompt cache'), 'mlxnb-panel-cache');
    cache.dataset.entries = String(engine.cache.entries);
    cache.dataset.bytes = String(engine.cache.bytes);
    this._rows(cache, [
      [trans.__('entries'), String(engine.cache.entries)],
      [trans.__('tokens'), String(engine.cache.tokens)],
      [trans.__('bytes'), `${bytes(engine.cache.bytes)} / ${bytes(engine.cache.budget_bytes)}`]
    ]);
    if (engine.cache.prompts.length) {
      const table = element('table', 'mlxnb-panel-table mlxnb-panel-prompts');
      const head = element('tr', '');
      for (const label of [trans.__('session'), trans.__('tokens'), trans.__('bytes'), trans.__('hits'), trans.__('age')]) {
        head.append(element('th', '', label));
      }
      table.append(head);
      for (const prompt of engine.cache.prompts) {
        const row = element('tr', 'mlxnb-panel-prompt');
        row.title = prompt.kind;
        row.append(
          element('td', '', prompt.session ?? '–'),
          element('td', '', String(prompt.tokens)),
          element('td', 'mlxnb-panel-prompt-bytes', bytes(prompt.bytes)),
          element('td', '', String(prompt.hits)),
          element('td', '', age(prompt.age_seconds))
        );
        table.append(row);
      }
      cache.append(table);
    }
    const lookups = element('ul', 'mlxnb-panel-lookups');
    for (const lookup of engine.cache.lookups.slice(0, 5)) {
      const item = element(
        'li',
        'mlxnb-panel-lookup',
        trans.__('%1 of %2 prompt tokens cached', lookup.cached_tokens, lookup.prompt_tokens)
      );
      if (lookup.miss_reason) {
        item.title = lookup.miss_reason;
      }
      lookups.append(item);
    }
    cache.append(lookups);
  }

  private _renderLive(live: ILiveRequest[]): void {
    const trans = this._trans;
    const section = this._section(trans.__('Live requests'), 'mlxnb-panel-live');
    if (!live.length) {
      section.append(element('div', 'mlxnb-panel-empty', trans.__('None.')));
      return;
    }
    for (const request of live) {
      const row = element('div', 'mlxnb-panel-request');
      row.dataset.id = request.id;
      const speed = request.tokens_per_second === null ? '–' : `${request.tokens_per_second.toFixed(1)} tok/s`;
      row.append(
        element('span', 'mlxnb-panel-session', request.session || request.kind),
        element('span', 'mlxnb-panel-tokens', trans.__('%1 tokens', request.tokens)),
        element('span', 'mlxnb-panel-speed', speed),
        element('span', 'mlxnb-panel-elapsed', seconds(request.seconds))
      );
      const stop = element('button', 'jp-mod-styled mlxnb-panel-stop', trans.__('Stop'));
      stop.onclick = () => this._connection?.send('stop', { id: request.id });
      row.append(stop);
      section.append(row);
    }
  }

  private _renderRecent(recent: IRecentRequest[]): void {
    const trans = this._trans;
    const section = this._section(trans.__('Recent requests'), 'mlxnb-panel-recent');
    if (!recent.length) {
      section.append(element('div', 'mlxnb-panel-empty', trans.__('None yet.')));
      return;
    }
    const table = element('table', 'mlxnb-panel-table');
    const head = element('tr', '');
    for (const label of [trans.__('session'), trans.__('prompt'), trans.__('cached'), trans.__('output'), 'TTFT', trans.__('end')]) {
      head.append(element('th', '', label));
    }
    table.append(head);
    for (const request of recent) {
      const row = element('tr', 'mlxnb-panel-recent-row');
      row.title = request.request_id ?? '';
      row.append(
        element('td', '', request.session || request.kind),
        element('td', '', String(request.prompt_tokens)),
        element('td', 'mlxnb-panel-cached', String(request.cached_tokens)),
        element('td', '', String(request.completion_tokens)),
        element('td', '', seconds(request.time_to_first_token)),
        element('td', '', request.error ? trans.__('error') : request.finish_reason ?? '–')
      );
      table.append(row);
    }
    section.append(table);
  }

  private _trans: TranslationBundle;
  private _connection: EngineConnection | null = null;
  private _source = '';
}
