// Runs the official A2A JavaScript SDK (@a2a-js/sdk, the version pinned in
// package.json) against the running research-agent example: the default
// resolver reads its Agent Card; the default client factory (no options)
// builds the SDK's A2A 1.0 JSON-RPC client from it and calls the 1.0 methods
// (SendMessage, GetTask, SendStreamingMessage, CancelTask, ListTasks); the
// SDK's A2A 0.3 transport (legacyCompat, given the card's 0.3 interface)
// calls the 0.3 methods (message/send, tasks/get, message/stream,
// tasks/cancel). The JavaScript snippet of docs/a2a.md runs too.
//
// Run by `make conformance-a2a-js`, which builds the example and passes its
// path in RESEARCH_AGENT_BIN. The agent runs in local mode on a free loopback
// port, with its own data folder and a generated API key.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

// Every route that serves the agent's card.
const CARD_PATHS = [
  '/.well-known/agent-card.json',
  '/.well-known/agent.json',
  '/.well-known/agents/research-agent_agent.json',
  '/.well-known/agents/v1.0.0/research-agent_agent.json',
];

const apiKey = randomBytes(24).toString('base64url');
let agent; // the child process
let base; // http://127.0.0.1:<port>
let dataDir;
let stderr = '';

// freePort asks the kernel for a free loopback port.
async function freePort() {
  const srv = createServer();
  await new Promise((resolve, reject) => srv.listen(0, '127.0.0.1', resolve).on('error', reject));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

// withKey sends the controller key in the header the card's security scheme names.
const withKey = (header) => (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set(header, apiKey);
  return fetch(input, { ...init, headers });
};

before(async () => {
  const bin = process.env.RESEARCH_AGENT_BIN;
  assert.ok(bin, 'RESEARCH_AGENT_BIN must name the built examples/research-agent (make conformance-a2a-js sets it)');
  dataDir = await mkdtemp(join(tmpdir(), 'a2a-js-conformance-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  agent = spawn(bin, [], {
    env: {
      PATH: process.env.PATH,
      HOME: dataDir,
      SUPERVAIZER_LOCAL_MODE: 'true',
      SUPERVAIZER_ADDR: `127.0.0.1:${port}`,
      SUPERVAIZER_DATA_DIR: dataDir,
      SUPERVAIZER_API_KEY: apiKey,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  agent.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise((resolve) => agent.once('exit', (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const done = await Promise.race([exited, sleep(100, null)]);
    if (done) {
      assert.fail(`the research agent exited (${JSON.stringify(done)}) before serving its card:\n${stderr}`);
    }
    try {
      const res = await fetch(base + CARD_PATHS[0]);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) assert.fail(`the research agent did not serve its card within 60 s:\n${stderr}`);
  }
});

after(async () => {
  if (agent && agent.exitCode === null && agent.signalCode === null) {
    const exited = new Promise((resolve) => agent.once('exit', resolve));
    agent.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
    if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
  }
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

// The states and roles of the SDK's 1.0 types (its protobuf enums).
const TASK_STATE_CANCELED = 5;
const TASK_STATE_INPUT_REQUIRED = 6;
const ROLE_USER = 1;

// startMessage is the params of a message calling the example's job.start
// on topic, in the SDK's own types (both transports write them in their
// binding's shape).
const startMessage = (topic, messageId = randomBytes(8).toString('hex')) => ({
  message: {
    messageId, role: ROLE_USER,
    parts: [{ content: { $case: 'data', value: { action: 'job.start', input: { topic_id: topic } } } }],
  },
});

// textMessage calls no action: a text part is refused with -32602.
const textMessage = () => ({
  message: { messageId: randomBytes(8).toString('hex'), role: ROLE_USER, parts: [{ content: { $case: 'text', value: 'hello' } }] },
});

// The error the SDK raises for a JSON-RPC error answer, with its code.
const rpcCode = (code) => (err) => {
  const envelope = err.envelopeCode ?? err.cause?.envelopeCode;
  assert.equal(envelope, code, `JSON-RPC error ${code}: ${err} ${JSON.stringify(err.data ?? err.cause?.data ?? {})}`);
  return true;
};

describe('the default resolver', () => {
  for (const path of CARD_PATHS) {
    test(`reads both JSON-RPC interfaces of ${path}, 1.0 first`, async () => {
      const card = await new DefaultAgentCardResolver().resolve(base, path);
      assert.equal(card.name, 'Research Agent');
      assert.deepEqual(card.supportedInterfaces, [
        { url: `${base}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: `${base}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3.0' },
      ]);
      assert.deepEqual(card.securitySchemes, {
        apiKey: { ...card.securitySchemes.apiKey, type: 'apiKey', in: 'header', name: 'X-API-Key' },
      });
    });
  }
});

describe('the default client factory', () => {
  for (const path of CARD_PATHS) {
    test(`builds the A2A 1.0 JSON-RPC client from ${path}`, async () => {
      const client = await new ClientFactory().createFromUrl(base, path);
      assert.equal(client.transport.protocolName, 'JSONRPC');
      assert.equal(client.transport.endpoint, `${base}/a2a`);
      assert.equal(client.protocolVersion, '1.0');
      assert.doesNotMatch(client.transport.constructor.name, /Legacy/);
    });
  }
});

// The A2A 1.0 methods through the default factory's client. The key goes in
// the header the card's security scheme names, as a service parameter of
// each call (the SDK sends service parameters as HTTP headers, with its
// A2A-Version: 1.0).
describe('the A2A 1.0 binding through the default client factory', () => {
  let client;
  let options;
  before(async () => {
    client = await new ClientFactory().createFromUrl(base);
    options = { serviceParameters: { [client.agentCard.securitySchemes.apiKey.name]: apiKey } };
  });

  test('without the key the controller refuses the call at the HTTP level', async () => {
    await assert.rejects(client.sendMessage(startMessage('ev-batteries')), /401/);
  });

  test('SendMessage starts a job: a task awaiting review, with its job_state; the same messageId replays it', async () => {
    const params = startMessage('ev-batteries');
    const task = await client.sendMessage(params, options);
    assert.ok(task.id, `a task: ${JSON.stringify(task)}`);
    assert.ok(task.contextId);
    assert.equal(task.status.state, TASK_STATE_INPUT_REQUIRED, 'SendMessage waits (returnImmediately is false): the draft brief awaits review');
    assert.equal(task.artifacts.length, 1);
    assert.equal(task.artifacts[0].artifactId, 'job_state');
    assert.equal(task.artifacts[0].parts[0].content.$case, 'data');
    assert.equal(task.artifacts[0].parts[0].content.value.job.id, task.id);

    const again = await client.sendMessage(params, options);
    assert.deepEqual(again, task, 'the same message is the same task');

    const got = await client.getTask({ id: task.id }, options);
    assert.equal(got.id, task.id);
    assert.equal(got.contextId, task.contextId);
    assert.equal(got.status.state, TASK_STATE_INPUT_REQUIRED);
    assert.deepEqual(got.artifacts, task.artifacts);

    const canceled = await client.cancelTask({ id: task.id }, options);
    assert.equal(canceled.id, task.id);
    assert.equal(canceled.status.state, TASK_STATE_CANCELED);
    assert.equal((await client.getTask({ id: task.id }, options)).status.state, TASK_STATE_CANCELED);
    await assert.rejects(client.cancelTask({ id: task.id }, options), rpcCode(-32002), 'a canceled task is not cancelable');
  });

  test('SendStreamingMessage: the task, then the stream ends at input-required', async () => {
    const events = [];
    for await (const event of client.sendMessageStream(startMessage('solid-state'), options)) {
      events.push(event.payload.$case);
      if (event.payload.$case === 'task') {
        assert.equal(event.payload.value.status.state, TASK_STATE_INPUT_REQUIRED);
      }
    }
    assert.deepEqual(events, ['task']);
  });

  test('GetTask of an unknown task is -32001', async () => {
    await assert.rejects(client.getTask({ id: 'no-such-task' }, options), rpcCode(-32001));
  });

  test('a text message goes to the conversation action: a Message, its history, its usage, partial chunks', async () => {
    const ask = (text, contextId) => ({ message: { messageId: randomBytes(8).toString('hex'), contextId, role: ROLE_USER,
      parts: [{ content: { $case: 'text', value: text } }] } });
    const q1 = 'How many jobs are there?';
    const first = await client.sendMessage(ask(q1), options);
    assert.ok(first.messageId && !first.status, `a Message: ${JSON.stringify(first)}`);
    assert.equal(first.parts[0].content.$case, 'text');
    const a1 = first.parts[0].content.value;
    assert.match(a1, /^This workspace has \d+ research jobs: /);
    const usage = (m) => m.metadata['supervaizer/usage'];
    assert.equal(usage(first).input_tokens, Math.floor((q1.length + 3) / 4));

    const q2 = 'And now?';
    const second = await client.sendMessage(ask(q2, first.contextId), options);
    assert.equal(second.contextId, first.contextId);
    assert.equal(usage(second).input_tokens, Math.floor((q2.length + q1.length + a1.length + 3) / 4),
      'the second message of the context sees the first exchange in its history');

    const events = [];
    let chunks = 0;
    for await (const event of client.sendMessageStream(ask(q1), options)) {
      events.push(event.payload.$case);
      if (event.payload.$case === 'artifactUpdate' && !event.payload.value.lastChunk) {
        assert.ok(!events.includes('statusUpdate'), 'a chunk after the end');
        chunks++;
      }
    }
    assert.ok(chunks >= 2, `partial chunks before the end: ${events}`);
    assert.equal(events[0], 'task');
    assert.equal(events.at(-1), 'statusUpdate');
  });

  test('ListTasks is an unsupported operation: -32004', async () => {
    await assert.rejects(client.listTasks({}, options), rpcCode(-32004));
  });
});

// legacyFactory enables the SDK's A2A 0.3 compatibility on the resolver and
// on both transports, as its documentation describes.
function legacyFactory(fetchImpl) {
  const legacyCompat = { enabled: true };
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    cardResolver: new DefaultAgentCardResolver({ legacyCompat }),
    transports: [
      new JsonRpcTransportFactory({ legacyCompat, fetchImpl }),
      new RestTransportFactory({ legacyCompat, fetchImpl }),
    ],
  }));
}

// legacyClient is the SDK's 0.3 client: legacyCompat, given the card as a
// client that speaks only 0.3 sees it (its 0.3 interface). Given the whole
// card the SDK prefers the 1.0 interface even with legacyCompat.
async function legacyClient(fetchImpl) {
  const card = await new DefaultAgentCardResolver().resolve(base);
  const v03 = { ...card, supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion !== '1.0') };
  return legacyFactory(fetchImpl).createFromAgentCard(v03);
}

describe('the A2A 0.3 binding through the SDK\'s 0.3 transport', () => {
  test('legacyCompat with the 0.3 interface chooses the 0.3 JSON-RPC transport', async () => {
    const client = await legacyClient();
    const v10 = (await new ClientFactory().createFromUrl(base)).transport;
    assert.match(client.transport.constructor.name, /LegacyJsonRpcTransport$/);
    assert.notEqual(client.transport.constructor, v10.constructor, 'not the 1.0 JSON-RPC transport');
    assert.equal(client.transport.protocolName, 'JSONRPC');
    assert.equal(client.protocolVersion, '0.3');
    assert.equal(client.transport.endpoint, `${base}/a2a`);
    const whole = await legacyFactory().createFromUrl(base);
    assert.equal(whole.protocolVersion, '1.0', 'the whole card: the 1.0 interface, preferred');
  });

  test('the key in the header the card declares reaches message/send', async () => {
    const anonymous = await legacyClient();
    await assert.rejects(anonymous.sendMessage(textMessage()), /401/);
    const keyed = await legacyClient(withKey('X-API-Key'));
    const answer = await keyed.sendMessage(textMessage()); // message/send of a text message: the conversation action answers
    assert.equal(answer.parts[0].content.$case, 'text', `the agent's text answer: ${JSON.stringify(answer)}`);
  });

  test('message/send, tasks/get, message/stream and tasks/cancel', async () => {
    const client = await legacyClient(withKey('X-API-Key'));
    const sent = await client.sendMessage(startMessage('ev-batteries'));
    const task = sent.payload?.$case === 'task' ? sent.payload.value : sent;
    assert.ok(task.id, `a task: ${JSON.stringify(sent)}`);
    assert.equal(task.status.state, TASK_STATE_INPUT_REQUIRED, 'input-required: the draft brief awaits review');
    assert.equal(task.artifacts.length, 1);

    const got = await client.getTask({ id: task.id });
    assert.equal(got.id, task.id);
    assert.equal(got.status.state, task.status.state);

    const events = [];
    let last;
    for await (const event of client.sendMessageStream(startMessage('solid-state'))) {
      events.push(event.payload?.$case ?? event.kind);
      last = event.payload?.value ?? event;
    }
    // A 0.3 stream always ends with a status update with final true, even
    // when its first Task is already settled (spec item 72).
    assert.deepEqual(events, ['task', 'statusUpdate'], 'a stream ends at input-required');
    assert.equal(last.status.state, TASK_STATE_INPUT_REQUIRED, 'the final update carries the state');

    const canceled = await client.cancelTask({ id: task.id });
    assert.equal(canceled.status.state, TASK_STATE_CANCELED);
  });
});

// The ```js blocks of docs/a2a.md run as written against the example, with
// its address and key: each prints what its comments say.
describe('the JavaScript snippet of docs/a2a.md', () => {
  test('runs with the default client factory', async () => {
    const here = dirname(fileURLToPath(import.meta.url));
    const doc = await readFile(join(here, '..', '..', 'docs', 'a2a.md'), 'utf8');
    const blocks = [...doc.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
    assert.equal(blocks.length, 1, 'docs/a2a.md has one JavaScript snippet');
    assert.match(blocks[0], /new ClientFactory\(\)/, 'the default factory');
    const code = blocks[0].replaceAll('http://localhost:8080', base).replaceAll('local-dev', apiKey);
    // In this folder, so that it resolves @a2a-js/sdk as the tests do.
    const file = join(here, `.docs-snippet-${randomBytes(4).toString('hex')}.mjs`);
    await writeFile(file, code);
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [file], { timeout: 60_000 });
      assert.equal(stdout, `true ${TASK_STATE_INPUT_REQUIRED}\ntask\n${TASK_STATE_CANCELED}\n`);
    } finally {
      await rm(file, { force: true });
    }
  });
});

// The ```js block of docs/conversations.md runs as written against the
// example: a text message, then a second of the same conversation.
describe('the JavaScript snippet of docs/conversations.md', () => {
  test('asks the conversation action twice', async () => {
    const here = dirname(fileURLToPath(import.meta.url));
    const doc = await readFile(join(here, '..', '..', 'docs', 'conversations.md'), 'utf8');
    const blocks = [...doc.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
    assert.equal(blocks.length, 1, 'docs/conversations.md has one JavaScript snippet');
    const code = blocks[0].replaceAll('http://localhost:8080', base).replaceAll('local-dev', apiKey);
    const file = join(here, `.docs-snippet-${randomBytes(4).toString('hex')}.mjs`);
    await writeFile(file, code);
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [file], { timeout: 60_000 });
      assert.match(stdout, /^This workspace has \d+ research jobs: [^\n]*\.\ntrue\n$/);
    } finally {
      await rm(file, { force: true });
    }
  });
});
