// Resolves the Agent Card of the running research-agent example with the
// official A2A JavaScript SDK (@a2a-js/sdk, the version pinned in
// package.json) and builds a client from it, with the SDK's default factory
// and with its A2A 0.3 compatibility (legacyCompat) enabled; through the
// latter it calls message/send, tasks/get and message/stream.
//
// Run by `make conformance-a2a-js`, which builds the example and passes its
// path in RESEARCH_AGENT_BIN. The agent runs in local mode on a free loopback
// port, with its own data folder and a generated API key.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

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

describe('the default resolver', () => {
  for (const path of CARD_PATHS) {
    test(`reads the JSON-RPC interface of ${path}`, async () => {
      const card = await new DefaultAgentCardResolver().resolve(base, path);
      assert.equal(card.name, 'Research Agent');
      assert.deepEqual(card.supportedInterfaces, [
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
    test(`builds a JSON-RPC client from ${path}`, async () => {
      const client = await new ClientFactory().createFromUrl(base, path);
      assert.equal(client.transport.protocolName, 'JSONRPC');
      assert.equal(client.transport.endpoint, `${base}/a2a`);
      // Without 0.3 compatibility the SDK speaks its own version.
      assert.equal(client.protocolVersion, '1.0');
    });
  }
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

describe('the client factory with legacyCompat', () => {
  for (const path of CARD_PATHS) {
    test(`chooses the 0.3 JSON-RPC transport for ${path}`, async () => {
      const client = await legacyFactory().createFromUrl(base, path);
      const v10 = (await new ClientFactory().createFromUrl(base, path)).transport;
      assert.match(client.transport.constructor.name, /LegacyJsonRpcTransport$/);
      assert.notEqual(client.transport.constructor, v10.constructor, 'not the 1.0 JSON-RPC transport');
      assert.equal(client.transport.protocolName, 'JSONRPC');
      assert.equal(client.protocolVersion, '0.3');
      assert.equal(client.transport.endpoint, `${base}/a2a`);
    });
  }

  test('reaches the endpoint with the key in the header the card declares', async () => {
    const card = await new DefaultAgentCardResolver().resolve(base);
    const header = card.securitySchemes.apiKey.name;
    const message = {
      message: { messageId: 'm-1', role: 1, parts: [{ content: { $case: 'text', value: 'hello' } }] },
    };

    // Without the key the controller refuses the call at the HTTP level.
    const anonymous = await legacyFactory().createFromUrl(base);
    await assert.rejects(anonymous.sendMessage(message), (err) => {
      assert.match(String(err), /401/);
      return true;
    });

    // With it the call reaches message/send, which answers -32602 naming the
    // one data part an action call is: a text part calls no action.
    const keyed = await legacyFactory(withKey(header)).createFromUrl(base);
    await assert.rejects(keyed.sendMessage(message), (err) => {
      assert.doesNotMatch(String(err), /401/);
      assert.match(String(err), /-32602|exactly one data part/i);
      return true;
    });
  });
});

// The A2A task methods through the legacyCompat client: message/send starts
// a research job (a task awaiting the operator's review), tasks/get reads it,
// message/stream follows another one to its first final state.
describe('the A2A task methods', () => {
  const start = (topic) => ({
    message: {
      messageId: randomBytes(8).toString('hex'), role: 1,
      parts: [{ content: { $case: 'data', value: { action: 'job.start', input: { topic_id: topic } } } }],
    },
  });

  test('message/send, tasks/get and message/stream', async () => {
    const card = await new DefaultAgentCardResolver().resolve(base);
    const client = await legacyFactory(withKey(card.securitySchemes.apiKey.name)).createFromUrl(base);
    const sent = await client.sendMessage(start('ev-batteries'));
    const task = sent.payload?.$case === 'task' ? sent.payload.value : sent;
    assert.ok(task.id, `a task: ${JSON.stringify(sent)}`);
    assert.equal(task.status.state, 6, 'input-required: the draft brief awaits review');
    assert.equal(task.artifacts.length, 1);

    const got = await client.getTask({ id: task.id });
    assert.equal(got.id, task.id);
    assert.equal(got.status.state, task.status.state);

    const events = [];
    for await (const event of client.sendMessageStream(start('solid-state'))) {
      events.push(event.payload?.$case ?? event.kind);
    }
    assert.deepEqual(events, ['task'], 'a stream ends at input-required');
  });
});
