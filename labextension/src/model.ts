/**
 * One kernel's end of the engine panel: the `mlx_notebook.panel` comm and its last snapshot.
 *
 * The panel never polls. The kernel pushes snapshots while a turn streams; otherwise the
 * connection asks for one each time the kernel goes idle (a cell ran: maybe `%load_model`).
 * A kernel without the extension loaded closes the comm at once ("not loaded"); a restart
 * drops it ("no engine" until the extension is loaded again).
 */

import { Kernel, KernelMessage } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { COMM_TARGET, ISnapshot } from './tokens';

export type ConnectionState = 'connecting' | 'connected' | 'not-loaded' | 'no-kernel';

export class EngineConnection {
  constructor(kernel: Kernel.IKernelConnection) {
    this.kernel = kernel;
    kernel.statusChanged.connect(this._onStatus, this);
    kernel.iopubMessage.connect(this._onIopub, this);
    this.connect();
  }

  readonly kernel: Kernel.IKernelConnection;
  state: ConnectionState = 'connecting';
  snapshot: ISnapshot | null = null;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Open the comm (again); the kernel answers with a snapshot. */
  connect(): void {
    if (this._disposed || this.kernel.isDisposed) {
      return;
    }
    this._comm?.dispose();
    const comm = this.kernel.createComm(COMM_TARGET);
    this._comm = comm;
    comm.onMsg = msg => {
      const data = msg.content.data as { kind?: string; snapshot?: ISnapshot };
      if (data.kind === 'snapshot' && data.snapshot) {
        this.snapshot = data.snapshot;
        this._setState('connected');
      }
    };
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
        this.snapshot = null;
        this._setState('not-loaded');
      }
    };
    comm.open({ kind: 'open' });
  }

  /** Send `{kind, ...}` to the kernel; reconnects first when the comm is gone. */
  send(kind: string, extra: Record<string, string> = {}): void {
    if (!this._comm || this._comm.isDisposed) {
      this.connect();
      return;
    }
    this._comm.send({ kind, ...extra });
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.kernel.statusChanged.disconnect(this._onStatus, this);
    this.kernel.iopubMessage.disconnect(this._onIopub, this);
    this._comm?.dispose();
    this._comm = null;
    Signal.clearData(this);
  }

  private _onStatus(_: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this._comm = null;
      this.snapshot = null;
      this._setState(status === 'dead' ? 'no-kernel' : 'not-loaded');
    }
  }

  private _onIopub(_: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    // Refresh when a cell finishes, not on every idle: our own refresh makes the kernel
    // busy and idle again, which would loop.
    const parent = msg.parent_header as Partial<KernelMessage.IHeader>;
    if (
      msg.header.msg_type === 'status' &&
      (msg.content as KernelMessage.IStatusMsg['content']).execution_state === 'idle' &&
      parent.msg_type === 'execute_request'
    ) {
      this.send('refresh');
    }
  }

  private _setState(state: ConnectionState): void {
    this.state = state;
    this._changed.emit();
  }

  private _comm: Kernel.IComm | null = null;
  private _changed = new Signal<this, void>(this);
  private _disposed = false;
}
