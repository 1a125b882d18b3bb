/**
 * The mlx-notebook JupyterLab extension: the engine panel and its commands, and Markdown
 * highlighting for `%%chat` cells. The turn renderer is the MIME extension in `mime.ts`.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import {
  EditorExtensionRegistry,
  IEditorExtensionRegistry,
  IEditorLanguageRegistry
} from '@jupyterlab/codemirror';
import { INotebookTracker } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { promptCellLanguage } from './highlight';
import { EngineConnection } from './model';
import { EnginePanel } from './panel';
import { CommandIDs, OPEN_TARGET } from './tokens';

const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'mlx-notebook:engine-panel',
  description: "A side panel showing the notebook kernel's MLX engine, with palette commands.",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('mlx_notebook');
    const panel = new EnginePanel(trans);
    const connections = new Map<string, EngineConnection>();
    const openTargets = new WeakSet<Kernel.IKernelConnection>();

    const currentKernel = (): Kernel.IKernelConnection | null =>
      notebooks.currentWidget?.sessionContext.session?.kernel ?? null;

    const connectionFor = (kernel: Kernel.IKernelConnection | null): EngineConnection | null => {
      if (!kernel || kernel.isDisposed) {
        return null;
      }
      let connection = connections.get(kernel.id);
      if (!connection || connection.isDisposed) {
        connection = new EngineConnection(kernel);
        connections.set(kernel.id, connection);
        kernel.disposed.connect(() => {
          connection?.dispose();
          connections.delete(kernel.id);
        });
      }
      return connection;
    };

    const listenForOpen = (kernel: Kernel.IKernelConnection | null) => {
      // `%mlx panel` opens a comm to this target; one registration per kernel connection.
      if (!kernel || openTargets.has(kernel)) {
        return;
      }
      openTargets.add(kernel);
      kernel.registerCommTarget(OPEN_TARGET, comm => {
        void app.commands.execute(CommandIDs.openPanel);
        comm.dispose();
      });
    };

    const follow = () => {
      const notebook = notebooks.currentWidget;
      listenForOpen(currentKernel());
      if (!panel.isAttached) {
        return;
      }
      panel.source = notebook?.context.path ?? '';
      panel.connection = connectionFor(currentKernel());
    };

    notebooks.currentChanged.connect(follow);
    notebooks.widgetAdded.connect((_, notebook) => {
      notebook.sessionContext.kernelChanged.connect(follow);
      notebook.sessionContext.statusChanged.connect(() => listenForOpen(notebook.sessionContext.session?.kernel ?? null));
    });

    app.commands.addCommand(CommandIDs.openPanel, {
      label: trans.__('MLX: Open engine panel'),
      caption: trans.__("Show the notebook kernel's model, live requests and prompt cache"),
      execute: () => {
        if (!panel.isAttached) {
          app.shell.add(panel, 'right', { rank: 900 });
        }
        app.shell.activateById(panel.id);
        follow();
      }
    });
    app.commands.addCommand(CommandIDs.stopAll, {
      label: trans.__('MLX: Stop all requests'),
      caption: trans.__("Stop every request the notebook kernel's engine is streaming"),
      isEnabled: () => currentKernel() !== null,
      execute: () => connectionFor(currentKernel())?.send('stop_all')
    });
    app.commands.addCommand(CommandIDs.clearCache, {
      label: trans.__('MLX: Clear the prompt cache'),
      caption: trans.__("Drop every prompt-cache entry of the notebook kernel's engine"),
      isEnabled: () => currentKernel() !== null,
      execute: () => connectionFor(currentKernel())?.send('clear_cache')
    });
    if (palette) {
      const category = trans.__('MLX notebook');
      for (const command of [CommandIDs.openPanel, CommandIDs.stopAll, CommandIDs.clearCache]) {
        palette.addItem({ command, category });
      }
    }
  }
};

const highlightPlugin: JupyterFrontEndPlugin<void> = {
  id: 'mlx-notebook:prompt-cells',
  description: 'Highlights %%chat and %%complete cell bodies as Markdown.',
  autoStart: true,
  requires: [IEditorExtensionRegistry, IEditorLanguageRegistry],
  activate: (_: JupyterFrontEnd, extensions: IEditorExtensionRegistry, languages: IEditorLanguageRegistry) => {
    extensions.addExtension({
      name: 'mlx-notebook:prompt-cells',
      factory: () => EditorExtensionRegistry.createImmutableExtension(promptCellLanguage(languages))
    });
  }
};

export default [panelPlugin, highlightPlugin];
