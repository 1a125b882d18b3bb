/**
 * Names shared by the plugins: comm targets, command ids, and the snapshot the kernel sends.
 *
 * The snapshot's layout is documented (and built) in mlx_notebook/panel.py; `%mlx status
 * --json` prints the same object.
 */

/** The kernel's comm target for the engine panel. */
export const COMM_TARGET = 'mlx_notebook.panel';

/** The front end's comm target `%mlx panel` opens to ask for the panel. */
export const OPEN_TARGET = 'mlx_notebook.panel.open';

export namespace CommandIDs {
  export const openPanel = 'mlx-notebook:open-panel';
  export const stopAll = 'mlx-notebook:stop-all';
  export const clearCache = 'mlx-notebook:clear-cache';
}

export interface IModelInfo {
  name: string;
  model_type: string;
  path: string;
  dtype: string | null;
  parameters: number;
  memory_bytes: number;
  context_length: number | null;
}

export interface ICacheLookup {
  request_id: string;
  prompt_tokens: number;
  cached_tokens: number;
  miss_reason: string | null;
}

export interface ICachedPrompt {
  tokens: number;
  bytes: number;
  kind: string;
  hits: number;
  age_seconds: number;
  session: string | null;
}

export interface IEngineState {
  model: IModelInfo;
  health: { alive: boolean; error: string | null };
  active_requests: number;
  memory: { active_bytes: number; peak_bytes: number };
  cache: {
    entries: number;
    tokens: number;
    bytes: number;
    budget_bytes: number;
    prompts: ICachedPrompt[];
    lookups: ICacheLookup[];
  };
}

export interface ILiveRequest {
  id: string;
  request_id: string | null;
  kind: string;
  session: string;
  model: string;
  tokens: number;
  tokens_per_second: number | null;
  seconds: number;
  prompt_tokens: number;
  cached_tokens: number;
}

export interface IRecentRequest {
  id: string;
  request_id: string | null;
  kind: string;
  session: string;
  model: string;
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  time_to_first_token: number | null;
  seconds: number;
  finish_reason: string | null;
  error: string | null;
  finished_at: number;
}

export interface ISnapshot {
  version: number;
  engine: IEngineState | null;
  live: ILiveRequest[];
  recent: IRecentRequest[];
}
