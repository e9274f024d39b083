/**
 * Worker-thread side of `sandbox-thread.ts`: starts the sandbox with the options it was given and
 * answers requests from the bench thread. Serving in its own thread gives the sandbox its own core, as a
 * real platform would have, so the measured side does not pay for the server's JavaScript.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { connectionDetails } from '../../src/sandbox/connection-details.ts';
import { type SandboxOptions, startSandbox } from '../../src/sandbox/index.ts';
import type { SandboxRequest } from './sandbox-thread.ts';

const sandbox = await startSandbox(workerData as SandboxOptions);
const port = parentPort!;

port.on('message', async (message: { id: number; request: SandboxRequest }) => {
  const { id, request } = message;
  try {
    let result: unknown;
    switch (request.op) {
      case 'stats':
        result = sandbox.control.stats();
        break;
      case 'resetStats':
        sandbox.control.resetStats();
        break;
      case 'setFaults':
        sandbox.control.setFaults(request.faults);
        break;
      case 'now':
        result = sandbox.control.now();
        break;
      case 'recordCount':
        result = sandbox.truth.records().length;
        break;
      case 'close':
        await sandbox.close();
        port.postMessage({ id, result: null });
        port.close();
        return;
    }
    port.postMessage({ id, result });
  } catch (error) {
    port.postMessage({ id, error: String(error) });
  }
});

port.postMessage({
  ready: {
    ...connectionDetails(sandbox),
    uids: sandbox.truth.users().map((u) => u.uid),
    records: sandbox.truth.records().length,
  },
});
