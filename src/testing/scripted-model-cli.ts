/**
 * Runs the scripted model as a process, for the offline demo and for users' tests in any language:
 *
 *     node dist/testing/scripted-model-cli.js --script turns.json [--port 0] [--host 127.0.0.1]
 *     node dist/testing/scripted-model-cli.js --tripwire
 *
 * Prints one line `{"url":"http://127.0.0.1:PORT/v1","port":PORT}` on stdout once it listens, then
 * serves until SIGINT or SIGTERM. A bad script or flag prints the error on stderr and exits 2.
 */
import { parseArgs } from "node:util";
import { startScriptedModel } from "./scripted-model.js";

const USAGE = "usage: scripted-model-cli (--script FILE | --tripwire) [--port N] [--host HOST]";

async function cli(argv: string[]): Promise<number> {
  let values: { script?: string; port?: string; host?: string; tripwire?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        script: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        tripwire: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    process.stderr.write(`--port must be an integer from 0 to 65535 (got ${values.port})\n`);
    return 2;
  }
  if (values.tripwire === (values.script !== undefined)) {
    process.stderr.write(`give exactly one of --script FILE and --tripwire\n${USAGE}\n`);
    return 2;
  }
  const common = { port, ...(values.host ? { host: values.host } : {}) };
  const model = await startScriptedModel(
    values.tripwire ? { tripwire: true, ...common } : { script: values.script as string, ...common },
  );
  process.stdout.write(`${JSON.stringify({ url: model.url, port: model.port })}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await model.close();
  return 0;
}

cli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = 2;
  },
);
