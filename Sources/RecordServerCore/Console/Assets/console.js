// record-server's web console (docs/admin-api.md "Web console"). Plain script, no framework:
// every view is built from the same /v1 API recordctl uses, with the session cookie the
// sign-in set; requests that change state carry the page's CSRF token. Text from the server
// only ever goes into text nodes (never innerHTML), so no recording label can inject markup.
'use strict';

const csrfToken = document.querySelector('meta[name="csrf-token"]').content;
const view = document.getElementById('view');
let cleanup = [];          // what the current view must stop when another one opens
let eventListeners = [];   // the current view's reactions to server events

// ---- API -------------------------------------------------------------------------------

class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

async function api(path, { method = 'GET', body } = {}) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = csrfToken;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { method, headers, credentials: 'same-origin',
                                       body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 401) { location.assign('/console/sign-in'); throw new APIError(401, 'unauthorized', 'signed out'); }
  const text = await response.text();
  const json = text ? JSON.parse(text) : {};
  if (!response.ok) {
    const error = json.error || {};
    throw new APIError(response.status, error.code || 'http_' + response.status, error.message || response.statusText);
  }
  return json;
}

function query(params) {
  const pairs = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '');
  return pairs.length ? '?' + pairs.map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v)).join('&') : '';
}

const enc = encodeURIComponent;

// ---- DOM helpers -----------------------------------------------------------------------

function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) element.addEventListener(key.slice(2), value);
    else if (key === 'dataset') Object.assign(element.dataset, value);
    else element.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

function table(headings, rows, empty) {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  return h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, headings.map((t) => h('th', {}, t)))),
    h('tbody', {}, rows)));
}

function notice(message) {
  const box = document.getElementById('notice');
  box.textContent = message;
  box.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { box.hidden = true; }, 6000);
}

const fmt = {
  date: (iso) => iso ? new Date(iso).toLocaleString() : '–',
  ago: (iso) => {
    if (!iso) return '–';
    const s = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
    return s < 60 ? `${s.toFixed(0)} s ago` : s < 3600 ? `${(s / 60).toFixed(0)} min ago` : `${(s / 3600).toFixed(1)} h ago`;
  },
  seconds: (s) => {
    if (!Number.isFinite(s)) return '–';
    const sign = s < 0 ? '-' : '';
    s = Math.abs(s);
    const m = Math.floor(s / 60), rest = s - m * 60;
    return `${sign}${m}:${rest.toFixed(2).padStart(5, '0')}`;
  },
  bytes: (n) => n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(0)} kB` : `${n} B`,
  bitrate: (b) => b >= 1e6 ? `${(b / 1e6).toFixed(2)} Mbit/s` : `${(b / 1e3).toFixed(0)} kbit/s`,
};

function every(milliseconds, action) {
  action();
  const timer = setInterval(action, milliseconds);
  cleanup.push(() => clearInterval(timer));
}

function failureText(error) { return error instanceof APIError ? `${error.message} (${error.code})` : String(error); }

// ---- Views -----------------------------------------------------------------------------

const views = {
  agents: renderAgents,
  sessions: renderSessions,
  recordings: renderRecordings,
  recording: renderRecording,
  servers: renderServers,
  play: renderPlayer,
};

function route() {
  for (const stop of cleanup) stop();
  cleanup = [];
  eventListeners = [];
  // #/name/argument?query: the query belongs to the whole route, with or without an argument.
  const [path, search] = location.hash.replace(/^#\/?/, '').split('?');
  const [name, ...rest] = path.split('/');
  const last = rest.join('/');
  const render = views[name] || views.agents;
  for (const link of document.querySelectorAll('header nav a')) {
    link.classList.toggle('current', link.dataset.view === (views[name] ? name : 'agents') ||
      (link.dataset.view === 'recordings' && (name === 'recording' || name === 'play')));
  }
  view.replaceChildren();
  document.body.dataset.view = views[name] ? name : 'agents';
  render(decodeURIComponent(last || ''), new URLSearchParams(search || ''));
}

function renderAgents() {
  const body = h('div');
  // Several idle agents ticked: one session across them (their tracks in one file, in the order ticked).
  const selected = [];
  const across = h('button', { type: 'button', id: 'start-across', disabled: true, onclick: () => startSessionAcross(selected.slice()) },
    'Start one session across the selected agents');
  const select = (agent, on) => {
    const at = selected.indexOf(agent);
    if (on && at < 0) selected.push(agent);
    if (!on && at >= 0) selected.splice(at, 1);
    across.disabled = selected.length < 2;
  };
  view.append(h('h1', {}, 'Agents'), h('p', {}, across), body);
  const refresh = async () => {
    try {
      const { agents, offline_agents: offline } = await api('/v1/agents');
      for (const agent of selected.slice()) if (!agents.some((a) => a.id === agent && !a.session_id)) select(agent, false);
      body.replaceChildren(table(['', 'Agent', 'Address', 'Version', 'Connected', 'Last seen', 'Round trip', 'Clock offset', 'Session', 'Capture', ''],
        [...agents.map((a) => h('tr', { dataset: { agent: a.id } },
          h('td', {}, a.session_id ? null : h('input', { type: 'checkbox', title: 'include in a session across agents',
            dataset: { select: a.id }, checked: selected.includes(a.id), onchange: (event) => select(a.id, event.target.checked) })),
          h('td', {}, a.id, ' ', h('span', { class: 'ok' }, '● online')),
          h('td', {}, a.address),
          h('td', {}, a.software_version),
          h('td', {}, fmt.date(a.connected_at)),
          h('td', {}, fmt.ago(a.last_seen)),
          h('td', { class: 'num' }, a.round_trip_millis == null ? '–' : `${a.round_trip_millis.toFixed(1)} ms`),
          h('td', { class: 'num', title: "the agent's monotonic clock minus the server's (their boot times differ; it should stay put)" },
            a.clock_offset_millis == null ? '–' : `${(a.clock_offset_millis / 1000).toFixed(3)} s`),
          h('td', {}, a.session_id ? h('a', { href: `#/play/${enc(a.session_id)}?live=1` }, a.session_id) : h('span', { class: 'muted' }, 'idle')),
          h('td', {}, a.capture_failure ? h('span', { class: 'bad', title: fmt.date(a.capture_failure.at) }, a.capture_failure.message) : h('span', { class: 'muted' }, 'ok')),
          h('td', {}, a.session_id ? null : h('button', { type: 'button', onclick: () => startSession(a.id) }, 'Start recording')))),
        ...offline.map((a) => h('tr', { dataset: { agent: a.id }, class: 'offline' },
          h('td', {}),
          h('td', {}, a.id, ' ', h('span', { class: 'muted' }, '○ offline')),
          h('td', { class: 'muted' }, a.last_address),
          h('td', {}, a.software_version),
          h('td', { class: 'muted', title: 'first seen ' + fmt.date(a.first_seen) }, '–'),
          h('td', {}, fmt.ago(a.last_seen)),
          h('td', {}, '–'), h('td', {}, '–'), h('td', {}, h('a', { href: '#/recordings' + query({ agent: a.id }) }, 'recordings')), h('td', {}, '–'), h('td', {})))],
        'No agent has connected to this server yet.'));
    } catch (error) { body.replaceChildren(h('p', { class: 'bad' }, failureText(error))); }
  };
  every(2000, refresh);
  eventListeners.push((event) => { if (event.type.startsWith('agent.') || event.type.startsWith('session.')) refresh(); });
}

async function startSession(agent) {
  try {
    const result = await api('/v1/sessions', { method: 'POST', body: { agent } });
    location.hash = result.session_id ? `#/play/${enc(result.session_id)}?live=1` : '#/sessions';
  } catch (error) { notice(`Cannot start a recording on ${agent}: ${failureText(error)}`); }
}

async function startSessionAcross(agents) {
  try {
    const result = await api('/v1/sessions', { method: 'POST', body: { agents } });
    location.hash = `#/play/${enc(result.session_id)}?live=1`;
  } catch (error) { notice(`Cannot start a session across ${agents.join(', ')}: ${failureText(error)}`); }
}

async function control(session, action) {
  if (action === 'cancel' && !confirm(`Cancel ${session}? Its files are deleted.`)) return;
  try { await api(`/v1/sessions/${enc(session)}/${action}`, { method: 'POST' }); }
  catch (error) { notice(`${action} ${session}: ${failureText(error)}`); }
}

function renderSessions() {
  const body = h('div');
  view.append(h('h1', {}, 'Live sessions'), body);
  const refresh = async () => {
    try {
      const { sessions } = await api('/v1/sessions');
      if (!sessions.length) { body.replaceChildren(h('p', { class: 'empty' }, 'Nothing is recording. Start a recording from the agents page or with recordctl start.')); return; }
      body.replaceChildren(...sessions.map((s) => h('section', { class: 'panel', dataset: { session: s.id } },
        h('h2', {}, s.id, ' ', h('span', { class: 'muted' }, `${s.agent_id} · ${s.state} · since ${fmt.date(s.started_at)}`)),
        Object.keys(s.labels || {}).length ? h('p', { class: 'muted' }, Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(', ')) : null,
        h('div', { class: 'controls' },
          h('a', { href: `#/play/${enc(s.id)}?live=1` }, 'Watch live'),
          h('button', { type: 'button', onclick: () => control(s.id, 'stop') }, 'Stop'),
          h('button', { type: 'button', class: 'danger', onclick: () => control(s.id, 'cancel') }, 'Cancel')),
        table(['Track', 'Kind', 'Codec', 'Status', 'fps', 'Bitrate', 'Lag', 'Dropped', 'Samples'],
          s.tracks.map((t) => h('tr', { dataset: { track: t.label } },
            h('td', {}, t.label), h('td', {}, t.kind), h('td', {}, t.codec),
            h('td', { class: t.error ? 'bad' : '' }, t.error ? `${t.status}: ${t.error}` : t.status),
            h('td', { class: 'num fps' }, t.kind === 'video' ? t.fps.toFixed(1) : '–'),
            h('td', { class: 'num bitrate' }, fmt.bitrate(t.bitrate)),
            h('td', { class: 'num lag' }, `${t.lag_seconds.toFixed(2)} s`),
            h('td', { class: 'num dropped' }, t.dropped),
            h('td', { class: 'num samples' }, t.samples))), 'No track yet.'))));
    } catch (error) { body.replaceChildren(h('p', { class: 'bad' }, failureText(error))); }
  };
  every(1000, refresh);
  eventListeners.push((event) => { if (event.type.startsWith('session.')) refresh(); });
}

// The fleet: every record-server sharing this one's catalog, as its last heartbeat described it
// (just this one with the embedded catalog). A server silent for 15 s is down; its sessions go
// to another server once their agents resume there (docs/operations.md, "A fleet").
function renderServers() {
  const body = h('div');
  view.append(h('h1', {}, 'Servers'), body);
  const refresh = async () => {
    try {
      const { this: me, servers } = await api('/v1/servers');
      body.replaceChildren(table(['Server', 'State', 'Ingest address', 'Version', 'Started', 'Last heartbeat', 'Live sessions', 'Agents'],
        servers.map((s) => h('tr', { dataset: { server: s.id }, class: s.alive ? '' : 'offline' },
          h('td', {}, s.id, s.id === me ? h('span', { class: 'muted' }, ' (this server)') : null),
          h('td', {}, s.alive ? h('span', { class: 'ok' }, '● up') : h('span', { class: 'bad' }, '○ down')),
          h('td', {}, s.ingest_address),
          h('td', {}, s.software_version),
          h('td', {}, fmt.date(s.started_at)),
          h('td', {}, fmt.ago(s.heartbeat_at)),
          h('td', { class: 'num sessions' }, s.live_sessions),
          h('td', { class: 'num agents' }, s.connected_agents))),
        'No server has sent a heartbeat yet.'));
    } catch (error) { body.replaceChildren(h('p', { class: 'bad' }, failureText(error))); }
  };
  every(5000, refresh);
}

const statuses = ['', 'recording', 'completed', 'interrupted', 'recovered', 'failed', 'cancelled'];

function renderRecordings(_, params) {
  const field = (name, attributes = {}) => h('input', { name, value: params.get(name) || '', ...attributes });
  const form = h('form', { class: 'filters panel', onsubmit: (e) => {
    e.preventDefault();
    const values = Object.fromEntries(new FormData(form).entries());
    location.hash = '#/recordings' + query(values);
  } },
    h('label', {}, 'Agent', field('agent', { placeholder: 'any' })),
    h('label', {}, 'Status', h('select', { name: 'status' }, statuses.map((s) => h('option', { value: s, selected: params.get('status') === s }, s || 'any')))),
    h('label', {}, 'Since', field('since', { type: 'datetime-local' })),
    h('label', {}, 'Until', field('until', { type: 'datetime-local' })),
    h('label', {}, 'Label', field('label', { placeholder: 'room or room=studio-2' })),
    h('label', {}, 'Session or file id contains', field('text', { placeholder: 'e.g. cam-1-2026' })),
    h('button', { type: 'submit' }, 'Search'));
  const body = h('div');
  view.append(h('h1', {}, 'Recordings'), form, body);
  const load = async () => {
    try {
      const iso = (local) => local ? new Date(local).toISOString() : undefined;
      const { recordings } = await api('/v1/recordings' + query({ agent: params.get('agent'), status: params.get('status'),
                                                                   since: iso(params.get('since')), until: iso(params.get('until')),
                                                                   label: params.get('label') }));
      const text = (params.get('text') || '').toLowerCase();
      const shown = recordings.filter((r) => !text || r.session_id.toLowerCase().includes(text) || r.id.toLowerCase().includes(text));
      body.replaceChildren(table(['Recording', 'Session', 'Agent', 'Status', 'Starts at', 'Duration', 'Size', 'Created', ''],
        shown.map((r) => h('tr', { dataset: { recording: r.id } },
          h('td', {}, h('a', { href: `#/recording/${enc(r.id)}` }, r.id)),
          h('td', {}, h('a', { href: `#/play/${enc(r.session_id)}` }, r.session_id)),
          h('td', {}, r.agent_id),
          h('td', { class: r.status === 'failed' ? 'bad' : '' }, r.status),
          h('td', { class: 'num' }, fmt.seconds(r.start_seconds)),
          h('td', { class: 'num' }, fmt.seconds(r.duration_seconds)),
          h('td', { class: 'num' }, fmt.bytes(r.size_bytes)),
          h('td', {}, fmt.date(r.created_at)),
          h('td', {}, r.status === 'recording' ? null : h('a', { href: `/v1/recordings/${enc(r.id)}/file`, download: '' }, 'Download')))),
        'No recording matches.'));
    } catch (error) { body.replaceChildren(h('p', { class: 'bad' }, failureText(error))); }
  };
  load();
  eventListeners.push((event) => { if (event.type.startsWith('recording.')) load(); });
}

async function sessionSegments(sessionID, agent) {
  const { recordings } = await api('/v1/recordings' + query({ agent, limit: 10000 }));
  return recordings.filter((r) => r.session_id === sessionID).sort((a, b) => a.segment_index - b.segment_index);
}

async function renderRecording(id) {
  try {
    const { recording: r, tracks } = await api(`/v1/recordings/${enc(id)}`);
    const segments = await sessionSegments(r.session_id, r.agent_id);
    view.append(
      h('h1', {}, r.id),
      h('p', {}, `Session `, h('a', { href: `#/play/${enc(r.session_id)}` }, r.session_id), ` · agent ${r.agent_id} · ${r.status}`,
        r.error ? h('span', { class: 'bad' }, ` · ${r.error}`) : null),
      h('div', { class: 'controls' },
        h('a', { href: `#/play/${enc(r.session_id)}` }, 'Play the session'),
        r.status === 'recording' ? null : h('a', { href: `/v1/recordings/${enc(r.id)}/file`, download: '' }, `Download this file (${fmt.bytes(r.size_bytes)})`)),
      h('h2', {}, 'Tracks'),
      table(['Track', 'Kind', 'Codec', 'Size', 'Status', 'Samples', 'Dropped'], tracks.map((t) => h('tr', { dataset: { track: t.label } },
        h('td', {}, t.label), h('td', {}, t.kind), h('td', {}, t.codec),
        h('td', {}, t.kind === 'video' ? `${t.width}×${t.height}` : '–'),
        h('td', { class: t.error ? 'bad' : '' }, t.error ? `${t.status}: ${t.error}` : t.status),
        h('td', { class: 'num' }, t.samples), h('td', { class: 'num' }, t.dropped))), 'No tracks.'),
      h('h2', {}, 'Segments of the session'),
      table(['File', 'Status', 'Starts at', 'Duration', 'Size', ''], segments.map((s) => h('tr', {},
        h('td', {}, h('a', { href: `#/recording/${enc(s.id)}` }, s.id)), h('td', {}, s.status),
        h('td', { class: 'num' }, fmt.seconds(s.start_seconds)), h('td', { class: 'num' }, fmt.seconds(s.duration_seconds)),
        h('td', { class: 'num' }, fmt.bytes(s.size_bytes)),
        h('td', {}, s.status === 'recording' ? null : h('a', { href: `/v1/recordings/${enc(s.id)}/file`, download: '' }, 'Download')))), 'None.'),
      exportForm(r.session_id, tracks.map((t) => t.label), 0, 10));
  } catch (error) { view.append(h('p', { class: 'bad' }, failureText(error))); }
}

/// A range of the session as one MP4 (GET /v1/sessions/{id}/export), downloaded by the browser.
function exportForm(sessionID, labels, from, to) {
  const fromInput = h('input', { type: 'number', step: '0.01', min: '0', value: from.toFixed(2), 'aria-label': 'from (s)' });
  const toInput = h('input', { type: 'number', step: '0.01', min: '0', value: to.toFixed(2), 'aria-label': 'to (s)' });
  const boxes = labels.map((label) => h('input', { type: 'checkbox', value: label, checked: true }));
  const link = h('a', { download: '', class: 'export-link' }, 'Download range');
  const update = () => {
    const tracks = boxes.filter((b) => b.checked).map((b) => b.value);
    link.href = `/v1/sessions/${enc(sessionID)}/export` + query({ from: fromInput.value, to: toInput.value,
      tracks: tracks.length === labels.length ? undefined : tracks.join(',') });
  };
  for (const input of [fromInput, toInput, ...boxes]) input.addEventListener('input', update);
  update();
  const form = h('div', { class: 'download panel' }, 'Export from', fromInput, 'to', toInput, 's of session time, tracks',
    labels.map((label, i) => h('label', {}, boxes[i], ' ', label)), link);
  form.setRange = (a, b) => { fromInput.value = a.toFixed(2); toInput.value = b.toFixed(2); update(); };
  return form;
}

// ---- Player ----------------------------------------------------------------------------

/// One track of a session fed to a media element through Media Source Extensions, from
/// GET /v1/sessions/{id}/tracks/{label}/stream: times are session seconds, so every track of
/// the session shares one timeline.
class TrackFeed {
  constructor(element, sessionID, label) {
    this.element = element; this.sessionID = sessionID; this.label = label;
    this.start = null; this.controller = null; this.error = null;
    this.received = 0;  // bytes of the current stream so far (shown by the browser tests on failure)
  }

  close() {
    if (this.controller) this.controller.abort();
    this.controller = null;
  }

  /// Opens the stream at `from` (session seconds; null: a finished session's start, a live
  /// one's newest keyframe). Resolves once the first media is buffered.
  open(from) {
    this.close();
    const controller = new AbortController();
    this.controller = controller;
    this.start = null;
    const source = new MediaSource();
    this.element.src = URL.createObjectURL(source);
    return new Promise((resolve, reject) => {
      source.addEventListener('sourceopen', () => {
        URL.revokeObjectURL(this.element.src);
        this.pump(source, from, controller, resolve).catch((error) => {
          if (controller.signal.aborted) return;
          this.error = error;
          reject(error);
        });
      }, { once: true });
    });
  }

  async pump(source, from, controller, ready) {
    const url = `/v1/sessions/${enc(this.sessionID)}/tracks/${enc(this.label)}/stream` + query({ from: from == null ? undefined : from.toFixed(3) });
    const response = await fetch(url, { signal: controller.signal, credentials: 'same-origin' });
    if (!response.ok) {
      const text = await response.text();
      let message = text;
      try { message = JSON.parse(text).error.message; } catch (_) { /* not JSON: keep the text */ }
      throw new APIError(response.status, 'stream', `${this.label}: ${message}`);
    }
    this.start = parseFloat(response.headers.get('X-Stream-Start'));
    const buffer = source.addSourceBuffer(response.headers.get('Content-Type'));
    const reader = response.body.getReader();
    let announced = false;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      this.received += value.length;
      await this.append(buffer, value);
      if (!announced && buffer.buffered.length) { announced = true; ready(this.start); }
      // Keep at most half a minute ahead of playback; the rest waits in the server.
      while (!controller.signal.aborted && buffer.buffered.length &&
             buffer.buffered.end(buffer.buffered.length - 1) - this.element.currentTime > 30) {
        await sleep(500);
      }
      if (controller.signal.aborted) return;
    }
    if (!announced) ready(this.start);
    if (source.readyState === 'open' && !buffer.updating) source.endOfStream();
  }

  async append(buffer, bytes) {
    for (let attempt = 0; ; attempt++) {
      try {
        buffer.appendBuffer(bytes);
        await new Promise((resolve) => buffer.addEventListener('updateend', resolve, { once: true }));
        return;
      } catch (error) {
        // QuotaExceededError: the browser holds enough; drop what was played long ago.
        if (error.name !== 'QuotaExceededError' || attempt > 5) throw error;
        const behind = this.element.currentTime - 10;
        if (behind > 0 && buffer.buffered.length && buffer.buffered.start(0) < behind) {
          buffer.remove(0, behind);
          await new Promise((resolve) => buffer.addEventListener('updateend', resolve, { once: true }));
        } else {
          await sleep(1000);
        }
      }
    }
  }

  buffers(t) {
    const ranges = this.element.buffered;
    for (let i = 0; i < ranges.length; i++) if (ranges.start(i) <= t + 0.05 && t < ranges.end(i)) return true;
    return false;
  }

  bufferedEnd() {
    const ranges = this.element.buffered;
    return ranges.length ? ranges.end(ranges.length - 1) : 0;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/// The session player: cameras side by side or picture-in-picture (one full frame, the other
/// inset, mirror and swap), the sound, one timeline. The sound (or, without one, the main
/// camera) is the clock; the other elements follow it: a small difference is closed by
/// playing a little faster or slower, a large one (after a seek, a stall) by jumping.
class Player {
  constructor(sessionID, tracks, { live, duration }) {
    this.sessionID = sessionID; this.live = live; this.duration = duration;
    const cameras = tracks.filter((t) => t.kind === 'video').map((t) => t.label);
    // What people want from a front + back recording: the back camera full frame, the front
    // one inset and mirrored (as a selfie preview shows it).
    cameras.sort((a, b) => (a === 'back' ? -1 : b === 'back' ? 1 : 0));
    const sound = tracks.find((t) => t.kind === 'audio');
    this.videos = cameras.map((label) => h('video', { muted: true, playsinline: true, dataset: { label } }));
    for (const video of this.videos) video.muted = true;
    this.audio = sound ? h('audio', { dataset: { label: sound.label } }) : null;
    if (this.audio) this.audio.muted = true;
    this.feeds = [...this.videos, ...(this.audio ? [this.audio] : [])].map((element) => new TrackFeed(element, sessionID, element.dataset.label));
    this.layout = cameras.length > 1 ? 'pip' : 'single';
    this.swapped = false;
    this.mirrorLabel = cameras.includes('front') ? 'front' : cameras[1];
    this.mirrored = cameras.length > 1;
    this.stage = h('div', { class: 'stage' }, this.videos, this.audio);
    this.status = h('span', { class: 'muted status' }, 'loading…');
    this.clock = h('span', { class: 'clock' }, '0:00.00');
    this.slider = h('input', { type: 'range', min: '0', max: String(Math.max(0.1, duration || 0)), step: '0.01', value: '0', 'aria-label': 'position' });
    this.slider.addEventListener('change', () => this.seek(parseFloat(this.slider.value)));
    this.playButton = h('button', { type: 'button', onclick: () => this.toggle() }, 'Pause');
    this.soundButton = h('button', { type: 'button', onclick: () => this.toggleSound(), disabled: !this.audio }, this.audio ? 'Sound on' : 'No sound');
    this.applyLayout();
  }

  get master() { return this.audio || this.videos[0]; }
  get elements() { return [...this.videos, ...(this.audio ? [this.audio] : [])]; }

  controls() {
    const layoutSelect = h('select', { 'aria-label': 'layout', onchange: (e) => { this.layout = e.target.value; this.applyLayout(); } },
      h('option', { value: 'pip', selected: this.layout === 'pip' }, 'Picture in picture'),
      h('option', { value: 'side-by-side', selected: this.layout === 'side-by-side' }, 'Side by side'));
    const many = this.videos.length > 1;
    return h('div', { class: 'controls' },
      this.playButton, this.soundButton, this.clock, this.slider,
      many ? layoutSelect : null,
      many ? h('button', { type: 'button', class: 'swap', onclick: () => { this.swapped = !this.swapped; this.applyLayout(); } }, 'Swap') : null,
      many ? h('label', {}, h('input', { type: 'checkbox', class: 'mirror', checked: this.mirrored, onchange: (e) => { this.mirrored = e.target.checked; this.applyLayout(); } }), ` mirror ${this.mirrorLabel}`) : null,
      this.live ? h('button', { type: 'button', onclick: () => this.goLive() }, 'Go live') : null,
      this.status);
  }

  applyLayout() {
    this.stage.className = `stage ${this.layout}`;
    const order = this.swapped ? [...this.videos].reverse() : this.videos;
    order.forEach((video, index) => {
      video.classList.toggle('main', this.layout === 'pip' && index === 0);
      video.classList.toggle('inset', this.layout === 'pip' && index === 1);
      video.hidden = this.layout === 'pip' && index > 1;
      video.classList.toggle('mirrored', this.mirrored && video.dataset.label === this.mirrorLabel);
    });
    if (this.layout === 'pip') this.stage.prepend(order[0]);
  }

  async start() {
    this.timer = setInterval(() => this.sync(), 200);
    if (this.live) await this.goLive(); else await this.seek(0);
  }

  stop() {
    this.stopped = true;
    clearInterval(this.timer);
    for (const feed of this.feeds) feed.close();
    for (const element of this.elements) { element.pause(); element.removeAttribute('src'); element.load(); }
  }

  /// Newest durable keyframe of every track, then playback a second behind the newest media.
  async goLive() {
    this.status.textContent = 'opening live streams…';
    try {
      // A session that has just started has nothing durable yet (404 before its first file,
      // 422 before its first fragment): try again until it has.
      for (;;) {
        try {
          await Promise.all(this.feeds.map((feed) => feed.open(null)));
          break;
        } catch (error) {
          if (this.stopped || !(error instanceof APIError) || ![404, 422].includes(error.status)) throw error;
          for (const feed of this.feeds) feed.close();
          this.status.textContent = 'waiting for the first recorded second…';
          await sleep(500);
        }
      }
      const start = Math.max(...this.feeds.map((feed) => feed.start));
      for (const element of this.elements) element.currentTime = start;
      await this.play();
      this.status.textContent = 'live';
    } catch (error) { this.status.textContent = failureText(error); }
  }

  async seek(t) {
    const wasPlaying = !this.master.paused || this.master.currentTime === 0;
    if (this.feeds.every((feed) => feed.buffers(t))) {
      for (const element of this.elements) element.currentTime = t;
      return;
    }
    this.status.textContent = `loading ${fmt.seconds(t)}…`;
    try {
      await Promise.all(this.feeds.map((feed) => feed.open(t)));
      const start = Math.max(t, ...this.feeds.map((feed) => feed.start ?? 0));
      for (const element of this.elements) element.currentTime = start;
      this.status.textContent = '';
      if (wasPlaying) await this.play();
    } catch (error) { this.status.textContent = failureText(error); }
  }

  /// Pauses everything and shows time `t` on every element; resolves once each has it.
  async showAt(t) {
    for (const element of this.elements) element.pause();
    this.playButton.textContent = 'Play';
    await Promise.all(this.elements.map((element) => new Promise((resolve) => {
      element.addEventListener('seeked', resolve, { once: true });
      element.currentTime = t;
    })));
  }

  async play() {
    const results = await Promise.allSettled(this.elements.map((element) => element.play()));
    const refused = results.find((r) => r.status === 'rejected');
    if (refused) this.status.textContent = `press play (${refused.reason.name})`;
    this.playButton.textContent = 'Pause';
  }

  toggle() {
    if (this.master.paused) { this.play(); } else {
      for (const element of this.elements) element.pause();
      this.playButton.textContent = 'Play';
    }
  }

  toggleSound() {
    if (!this.audio) return;
    this.audio.muted = !this.audio.muted;
    this.soundButton.textContent = this.audio.muted ? 'Sound on' : 'Sound off';
  }

  sync() {
    const master = this.master;
    const now = master.currentTime;
    this.clock.textContent = fmt.seconds(now);
    if (this.live) {
      const edge = Math.min(...this.feeds.map((feed) => feed.bufferedEnd()));
      this.slider.max = String(Math.max(edge, 0.1));
      // Fallen far behind the newest media (a stall): back to a second behind it.
      if (!master.paused && edge - now > 6) for (const element of this.elements) element.currentTime = edge - 1;
    }
    if (document.activeElement !== this.slider) this.slider.value = String(now);
    for (const element of this.elements) {
      if (element === master) continue;
      if (master.paused) {
        if (!element.paused) element.pause();
        if (Math.abs(element.currentTime - now) > 0.01) element.currentTime = now;
        continue;
      }
      const ahead = element.currentTime - now;
      if (Math.abs(ahead) > 0.3) { element.currentTime = now; element.playbackRate = 1; }
      else if (Math.abs(ahead) > 0.02) element.playbackRate = Math.min(1.1, Math.max(0.9, 1 - ahead));
      else element.playbackRate = 1;
      if (element.paused && element.readyState >= 2) element.play().catch(() => { /* the status line already asks for a press */ });
    }
  }
}

async function renderPlayer(sessionID, params) {
  const live = params.get('live') === '1';
  view.append(h('h1', {}, `${live ? 'Live: ' : ''}${sessionID}`));
  try {
    let tracks, duration = 0, segments = [];
    const { sessions } = await api('/v1/sessions');
    const running = sessions.find((s) => s.id === sessionID);
    if (running) {
      tracks = running.tracks.map((t) => ({ label: t.label, kind: t.kind }));
      duration = (Date.now() - new Date(running.started_at).getTime()) / 1000;
    } else {
      const { recordings } = await api('/v1/recordings' + query({ limit: 10000 }));
      segments = recordings.filter((r) => r.session_id === sessionID);
      if (!segments.length) throw new APIError(404, 'not_found', `no session ${sessionID}`);
      const detail = await api(`/v1/recordings/${enc(segments[0].id)}`);
      tracks = detail.tracks.map((t) => ({ label: t.label, kind: t.kind }));
      duration = Math.max(...segments.map((s) => s.start_seconds + s.duration_seconds));
    }
    const player = new Player(sessionID, tracks, { live: live && !!running, duration });
    window.consolePlayer = player;  // for the browser tests and the curious
    cleanup.push(() => { player.stop(); window.consolePlayer = null; });
    view.append(player.stage, player.controls(),
      exportForm(sessionID, tracks.map((t) => t.label), 0, Math.min(10, duration || 10)),
      segments.length ? h('p', { class: 'muted' }, `${segments.length} file(s): `,
        segments.sort((a, b) => a.segment_index - b.segment_index).map((s) => h('a', { href: `#/recording/${enc(s.id)}` }, s.id, ' '))) : null);
    eventListeners.push((event) => {
      if (event.session_id === sessionID && event.type === 'session.ended') player.status.textContent = 'the session has ended';
    });
    await player.start();
  } catch (error) { view.append(h('p', { class: 'bad' }, failureText(error))); }
}

// ---- Events and start-up ---------------------------------------------------------------

function listen() {
  const indicator = document.getElementById('connection');
  const source = new EventSource('/v1/events');
  source.onopen = () => { indicator.textContent = 'live'; indicator.classList.add('live'); };
  source.onerror = () => { indicator.textContent = 'reconnecting…'; indicator.classList.remove('live'); };
  const deliver = (message) => {
    let event;
    try { event = JSON.parse(message.data); } catch (_) { return; }  // not an event of ours
    for (const listener of eventListeners) listener(event);
  };
  for (const type of ['agent.online', 'agent.offline', 'agent.capture_failed', 'session.started', 'session.ended',
    'recording.finished', 'recording.failed', 'recording.recovered']) source.addEventListener(type, deliver);
}

document.getElementById('sign-out').addEventListener('click', async () => {
  await fetch('/console/sign-out', { method: 'POST', headers: { 'X-CSRF-Token': csrfToken }, credentials: 'same-origin' });
  location.assign('/console/sign-in');
});
window.addEventListener('hashchange', route);
listen();
route();
