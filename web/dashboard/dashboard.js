// vkube GPU-pool dashboard: reads the host's nodes, pods, namespaces and /metrics every 2 s through
// relative URLs (the page lives at /dashboard/ on the host or behind `vkube dashboard`) and renders
// the pool now (nodes and GPUs coloured by the tenants holding them), the tenants' shares, and their
// history since the page was opened. No libraries, no inline script or style (the server's CSP is
// default-src 'self'): styles are set through the CSSOM, SVG colours through presentation attributes.
'use strict';

(function () {
  const REFRESH_MS = 2000;
  const FETCH_TIMEOUT_MS = 15000;
  const HISTORY_MS = 30 * 60 * 1000;
  const SVG_NS = 'http://www.w3.org/2000/svg';
  // Pods that no longer hold anything are left out by the server when it can (vkube supports
  // field selectors on status.phase); the client filters again in case it cannot.
  const URLS = {
    nodes: '../api/v1/nodes',
    pods: '../api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed',
    namespaces: '../api/v1/namespaces',
    metrics: '../metrics',
  };
  const SIMULATED_LABEL = 'vkube.io/simulated';
  const DEVICES_ANNOTATION = 'gpu.vkube.io/devices';
  const ALLOCATION_ANNOTATION = 'gpu.vkube.io/allocation';
  const SHARE_ANNOTATION = 'vkube.io/gpu-share';
  const TENANT_LABEL = 'vkube.io/tenant';
  const PRODUCT_LABEL = 'nvidia.com/gpu.product';
  const MIG_PREFIX = 'nvidia.com/mig-';

  const $ = (id) => document.getElementById(id);

  // ---- numbers -------------------------------------------------------------------------------
  // Thousandths of a GPU as GPUs for people ("3.39") and for the DOM contract ("3.393").
  function gpus(milli) {
    const v = milli / 1000;
    if (Number.isInteger(v)) return String(v);
    return v.toFixed(2).replace(/0+$/, '').replace(/\.$/, '');
  }
  const exact = (milli) => String(Math.round(milli) / 1000);
  const pct = (part, whole) => (whole > 0 ? Math.round((100 * part) / whole) + '%' : '–');
  const clock = (t) => new Date(t).toLocaleTimeString([], {hour12: false});

  // ---- colours: stable per tenant for the life of the page -----------------------------------
  // Tableau 10 without its pink and grey (too close to its red and to idle cells): eight hues that
  // stay apart from each other.
  const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1',
                   '#9c755f'];
  const colours = new Map();
  const usedSlots = new Set();
  function fnv1a(s) {
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h;
  }
  // A tenant keeps the slot its name hashes to (so it is the same colour on every page load)
  // unless another tenant took it first; then the next free one. Past the palette: golden-angle hues.
  function colourOf(name) {
    let c = colours.get(name);
    if (c) return c;
    const h = fnv1a(name);
    for (let i = 0; i < PALETTE.length && !c; i++) {
      const slot = (h + i) % PALETTE.length;
      if (!usedSlots.has(slot)) {
        usedSlots.add(slot);
        c = PALETTE[slot];
      }
    }
    if (!c) c = 'hsl(' + ((colours.size * 137.508) % 360).toFixed(0) + ' 55% 52%)';
    colours.set(name, c);
    return c;
  }

  // A coloured square and the name beside it, for tables and legends.
  function swatch(name) {
    const sw = document.createElement('i');
    sw.className = 'sw';
    sw.style.background = colourOf(name);
    return sw;
  }
  function legendKey(name) {
    const k = document.createElement('span');
    k.className = 'key';
    k.append(swatch(name), document.createTextNode(name));
    return k;
  }

  // ---- Prometheus text format ----------------------------------------------------------------
  // Returns Map name -> [{labels, value}].
  function parseMetrics(text) {
    const out = new Map();
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (!line || line[0] === '#') continue;
      let i = 0;
      while (i < line.length && line[i] !== '{' && line[i] !== ' ') i++;
      const name = line.slice(0, i);
      const labels = {};
      if (line[i] === '{') {
        i++;
        while (i < line.length && line[i] !== '}') {
          const eq = line.indexOf('=', i);
          if (eq < 0) break;
          const key = line.slice(i, eq).trim().replace(/^,/, '').trim();
          i = eq + 2;  // past ="
          let val = '';
          while (i < line.length && line[i] !== '"') {
            if (line[i] === '\\' && i + 1 < line.length) {
              i++;
              val += line[i] === 'n' ? '\n' : line[i];
            } else {
              val += line[i];
            }
            i++;
          }
          labels[key] = val;
          i++;  // closing quote
          while (i < line.length && (line[i] === ',' || line[i] === ' ')) i++;
        }
        i++;
      }
      const value = parseFloat(line.slice(i).trim().split(/\s+/)[0]);
      if (!name || Number.isNaN(value)) continue;
      if (!out.has(name)) out.set(name, []);
      out.get(name).push({labels, value});
    }
    return out;
  }
  const metricSum = (m, name) =>
    m.has(name) ? m.get(name).reduce((s, x) => s + x.value, 0) : null;
  function metricBy(m, name, label) {
    const r = new Map();
    for (const x of m.get(name) || []) r.set(x.labels[label], x.value);
    return r;
  }

  // ---- the model: what the four answers say --------------------------------------------------
  function annotations(obj) { return (obj.metadata && obj.metadata.annotations) || {}; }
  function labels(obj) { return (obj.metadata && obj.metadata.labels) || {}; }

  // The node's GPUs as the scheduler sees them (gpu::NodeGpus::of_node): the devices annotation,
  // else nvidia.com/gpu devices plus one pseudo GPU per MIG resource, numbered from 1000. Under
  // time-slicing each replica is a device of its own, so the annotation does not apply.
  function nodeGpus(node) {
    const ann = annotations(node)[DEVICES_ANNOTATION];
    const replicas = parseInt(labels(node)['nvidia.com/gpu.replicas'] || '1', 10) || 1;
    if (ann && replicas <= 1) {
      try {
        const list = JSON.parse(ann).gpus;
        if (Array.isArray(list) && list.length) {
          return list.map((g) => ({index: g.index, model: g.model || '', mig: g.mig || []}));
        }
      } catch (e) { /* fall through to the capacity */ }
    }
    const alloc = (node.status && node.status.allocatable) || {};
    const model = labels(node)[PRODUCT_LABEL] || '';
    const out = [];
    const n = Math.min(parseInt(alloc['nvidia.com/gpu'] || '0', 10) || 0, 4096);
    for (let i = 0; i < n; i++) out.push({index: i, model, mig: []});
    let next = 1000;
    for (const key of Object.keys(alloc).sort()) {
      if (!key.startsWith(MIG_PREFIX)) continue;
      const count = Math.min(parseInt(alloc[key], 10) || 0, 64);
      if (count > 0) out.push({index: next++, model, mig: Array(count).fill(key.slice(MIG_PREFIX.length))});
    }
    return out;
  }

  // gpu.vkube.io/allocation: "0=1000,1=1000" (whole GPUs), "3=500" (a share), "7/2=1g.10gb" (slice 2
  // of GPU 7); see gpu::Allocation::format.
  function parseAllocation(text) {
    const shares = [];
    const slices = [];
    for (const part of String(text).split(',')) {
      const eq = part.indexOf('=');
      if (eq < 0) continue;
      const left = part.slice(0, eq).trim();
      const right = part.slice(eq + 1).trim();
      const slash = left.indexOf('/');
      if (slash >= 0) {
        slices.push({gpu: +left.slice(0, slash), slice: +left.slice(slash + 1), profile: right});
      } else if (+right > 0) {
        shares.push({gpu: +left, milli: Math.min(+right, 1000)});
      }
    }
    return {shares, slices};
  }

  // "deserved=4,limit=8" -> {deserved: 4000, limit: 8000}
  function parseShare(text) {
    const out = {};
    for (const part of String(text || '').split(',')) {
      const [k, v] = part.split('=');
      if (v !== undefined && /^[0-9.]+$/.test(v.trim())) out[k.trim()] = Math.round(parseFloat(v) * 1000);
    }
    return out;
  }

  // How much of its GPU a MIG profile takes, in compute slices: "3g.40gb" is 3 of an A100's 7.
  function migWidth(profile) {
    const m = /^(\d+)g/.exec(profile);
    return m ? parseInt(m[1], 10) : 1;
  }

  // Namespace -> tenant (label vkube.io/tenant, else the name vkube-NAME), and each tenant's share
  // as its namespace's annotation states it.
  function readNamespaces(nsList) {
    const nsTenant = new Map();
    const tenantShare = new Map();
    for (const ns of nsList.items || []) {
      const name = ns.metadata.name;
      const t = labels(ns)[TENANT_LABEL] || (name.startsWith('vkube-') ? name.slice(6) : null);
      if (!t) continue;
      nsTenant.set(name, t);
      tenantShare.set(t, parseShare(annotations(ns)[SHARE_ANNOTATION]));
    }
    return {nsTenant, tenantShare};
  }

  function readNodes(nodeList) {
    const nodes = [];
    const byName = new Map();
    for (const n of nodeList.items || []) {
      const node = {
        name: n.metadata.name,
        model: labels(n)[PRODUCT_LABEL] || '',
        simulated: labels(n)[SIMULATED_LABEL] === 'true',
        gpus: nodeGpus(n).map((g) => ({...g, shares: [], slices: new Map()})),
      };
      node.byIndex = new Map(node.gpus.map((g) => [g.index, g]));
      nodes.push(node);
      byName.set(node.name, node);
    }
    nodes.sort((a, b) => a.name.localeCompare(b.name, undefined, {numeric: true}));
    return {nodes, byName};
  }

  // Puts every pod's devices on its node's GPUs; returns per holder (a tenant, else the namespace)
  // the pods running with GPUs and those waiting, and the number of waiting pods.
  function readPods(podList, byName, nsTenant) {
    const tenantOfNs = (ns) => nsTenant.get(ns) || (ns.startsWith('vkube-') ? ns.slice(6) : null);
    // Per holder (a tenant, else the namespace): pods running with GPUs and pods waiting.
    const pods = new Map();
    const count = (holder, key) => {
      if (!pods.has(holder)) pods.set(holder, {running: 0, waiting: 0, milli: 0});
      pods.get(holder)[key]++;
      return pods.get(holder);
    };
    let waiting = 0;
    for (const p of podList.items || []) {
      const phase = p.status && p.status.phase;
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      const ns = p.metadata.namespace;
      const tenant = tenantOfNs(ns);
      const holder = tenant || ns;
      const text = annotations(p)[ALLOCATION_ANNOTATION];
      const node = p.spec && p.spec.nodeName ? byName.get(p.spec.nodeName) : null;
      if (!text || !node) {
        if (!(p.spec && p.spec.nodeName) && phase === 'Pending') {
          waiting++;
          count(holder, 'waiting');
        }
        continue;
      }
      const a = parseAllocation(text);
      const c = count(holder, 'running');
      for (const s of a.shares) {
        const g = node.byIndex.get(s.gpu);
        if (g) g.shares.push({holder, tenant, milli: s.milli});
        c.milli += s.milli;
      }
      for (const s of a.slices) {
        const g = node.byIndex.get(s.gpu);
        if (g) g.slices.set(s.slice, {holder, tenant, profile: s.profile});
      }
    }
    return {pods, waiting};
  }

  // Tenants: those the namespaces name and those the scheduler's books report; the books' figures
  // where /metrics has them, else what the namespaces and pods say.
  function readTenants(metrics, nsTenant, tenantShare, pods) {
    const M = (name) => metricBy(metrics, 'vkube_tenant_gpu_' + name + '_milli', 'tenant');
    const book = {deserved: M('deserved'), limit: M('limit'), allocated: M('allocated'),
                  borrowed: M('borrowed'), lent: M('lent'), pending: M('pending'),
                  reclaiming: M('reclaiming'), fair: M('fair_share')};
    const haveBooks = metrics.has('vkube_tenant_gpu_allocated_milli');
    const nsAlloc = metricBy(metrics, 'vkube_namespace_gpu_allocated_milli', 'namespace');
    const names = new Set([...nsTenant.values(), ...book.allocated.keys(), ...book.deserved.keys()]);
    names.delete(undefined);
    const tenants = [...names].sort().map((name) => {
      const share = tenantShare.get(name) || {};
      const p = pods.get(name) || {running: 0, waiting: 0, milli: 0};
      const get = (k, fallback) => (book[k].has(name) ? book[k].get(name) : fallback);
      return {
        name,
        deserved: get('deserved', share.deserved || 0),
        limit: get('limit', share.limit !== undefined ? share.limit : -1),
        allocated: get('allocated', haveBooks ? 0 : (nsAlloc.get('vkube-' + name) ?? p.milli)),
        borrowed: get('borrowed', 0),  // replaced below when the books are missing
        lent: get('lent', 0),
        pending: get('pending', 0),
        reclaiming: get('reclaiming', 0),
        fair: get('fair', null),
        running: p.running,
        waiting: p.waiting,
      };
    });

    if (!haveBooks) {
      for (const t of tenants) t.borrowed = Math.max(0, t.allocated - t.deserved);
    }
    return tenants;
  }

  // The pool: the scheduler's own figures where /metrics has them, else counted here.
  function readPool(metrics, nodes, tenants, waiting) {
    let capMilli = 0, allocMilli = 0, fragMilli = 0, migGpus = 0, slicesTotal = 0, slicesUsed = 0;
    let wholeFree = 0;
    const models = new Map();
    for (const n of nodes) {
      for (const g of n.gpus) {
        if (g.model) models.set(g.model, (models.get(g.model) || 0) + 1);
        if (g.mig.length) {
          migGpus++;
          slicesTotal += g.mig.length;
          slicesUsed += g.slices.size;
          continue;
        }
        const held = Math.min(1000, g.shares.reduce((s, x) => s + x.milli, 0));
        capMilli += 1000;
        allocMilli += held;
        if (held > 0 && held < 1000) fragMilli += 1000 - held;
        if (held === 0) wholeFree++;
      }
    }
    return {
      nodes: nodes.length,
      simulated: nodes.filter((n) => n.simulated).length,
      capacity: metricSum(metrics, 'vkube_cluster_gpu_capacity_milli') ?? capMilli,
      allocated: metricSum(metrics, 'vkube_cluster_gpu_allocated_milli') ?? allocMilli,
      stranded: metricSum(metrics, 'vkube_cluster_gpu_fragmented_milli') ?? fragMilli,
      pending: tenants.reduce((s, t) => s + t.pending, 0),
      waiting: metrics.has('scheduler_pending_pods') ? metricSum(metrics, 'scheduler_pending_pods') : waiting,
      migGpus, slicesTotal, slicesUsed, wholeFree, models,
    };
  }

  function buildModel(nodeList, podList, nsList, metrics) {
    const {nsTenant, tenantShare} = readNamespaces(nsList);
    const {nodes, byName} = readNodes(nodeList);
    const {pods, waiting} = readPods(podList, byName, nsTenant);
    const tenants = readTenants(metrics, nsTenant, tenantShare, pods);
    return {nodes, tenants, pool: readPool(metrics, nodes, tenants, waiting)};
  }

  // ---- fetching ------------------------------------------------------------------------------
  class FetchError extends Error {
    constructor(url, status, message) {
      super(message);
      this.url = url;
      this.status = status;
    }
  }

  async function get(url, asText) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
    let res;
    try {
      res = await fetch(url, {
        credentials: 'same-origin',
        cache: 'no-store',
        signal: ctl.signal,
        headers: {Accept: asText ? 'text/plain' : 'application/json'},
      });
    } catch (e) {
      throw new FetchError(url, 0, e.name === 'AbortError' ? 'no answer in 15 s' : String(e.message || e));
    } finally {
      clearTimeout(timer);
    }
    const body = await res.text();
    if (!res.ok) {
      let msg = body.slice(0, 300);
      try {
        const s = JSON.parse(body);
        if (s && s.message) msg = s.message;
      } catch (e) { /* not a Status */ }
      throw new FetchError(url, res.status, msg);
    }
    if (asText) return body;
    try {
      return JSON.parse(body);
    } catch (e) {
      throw new FetchError(url, res.status, 'the answer is not JSON');
    }
  }

  // One line per kind of failure, naming every path it hit: "403 Forbidden reading /api/v1/nodes
  // and /metrics: ...".
  function describeErrors(errors) {
    const groups = new Map();
    for (const e of errors) {
      const key = e.status + '\n' + (e.status === 401 ? '' : e.message);
      if (!groups.has(key)) groups.set(key, {e, paths: []});
      const path = String(e.url || '').replace(/^\.\.\//, '/').replace(/\?.*$/, '');
      if (path) groups.get(key).paths.push(path);
    }
    const lines = [];
    for (const {e, paths} of groups.values()) {
      const what = paths.length > 1 ? paths.slice(0, -1).join(', ') + ' and ' + paths[paths.length - 1]
                                    : paths[0] || 'the answers';
      if (e.status === 401) {
        lines.push('401 Unauthorized reading ' + what + ': the host did not accept the credentials. ' +
                   'Open the page through `vkube dashboard --kubeconfig HOST.kubeconfig`, which signs ' +
                   'its requests with the kubeconfig\'s credentials.');
      } else if (e.status === 403) {
        lines.push('403 Forbidden reading ' + what + ': ' + (e.message || 'this user may not read it') + '.');
      } else if (e.status > 0) {
        lines.push('HTTP ' + e.status + ' reading ' + what + ': ' + e.message);
      } else if (e.status === 0) {
        lines.push('Cannot reach the host (' + what + '): ' + (e.message || 'network error') + '.');
      } else {
        lines.push(e.message);
      }
    }
    return lines.join(' ');
  }

  // ---- rendering: the summary ----------------------------------------------------------------
  function setText(id, text) {
    const el = $(id);
    if (el.textContent !== text) el.textContent = text;
  }

  function renderSummary(pool) {
    const s = $('pool-summary');
    s.dataset.capacityGpus = exact(pool.capacity);
    s.dataset.allocatedGpus = exact(pool.allocated);
    s.dataset.strandedGpus = exact(pool.stranded);
    setText('sum-capacity', gpus(pool.capacity));
    const modelText = [...pool.models].map(([m, n]) => n + '× ' + m.replace(/^NVIDIA-/, '')).join(', ');
    let detail = pool.nodes + (pool.nodes === 1 ? ' node' : ' nodes');
    if (modelText) detail += ' · ' + modelText;
    if (pool.migGpus) {
      detail += ' · ' + pool.migGpus + ' in MIG mode (' + pool.slicesUsed + ' of ' +
                pool.slicesTotal + ' slices used)';
    }
    setText('sum-capacity-detail', detail);
    setText('sum-allocated', gpus(pool.allocated));
    setText('sum-allocated-detail', pct(pool.allocated, pool.capacity) + ' of capacity');
    $('sum-allocated-bar').style.width =
        (pool.capacity > 0 ? Math.min(100, (100 * pool.allocated) / pool.capacity) : 0) + '%';
    const idle = Math.max(0, pool.capacity - pool.allocated);
    setText('sum-idle', gpus(idle));
    setText('sum-idle-detail', pool.wholeFree + (pool.wholeFree === 1 ? ' whole GPU free' : ' whole GPUs free'));
    setText('sum-stranded', gpus(pool.stranded));
    setText('sum-stranded-detail', pool.stranded > 0
        ? pct(pool.stranded, idle) + ' of the idle capacity, in pieces too small for the pods this pool runs'
        : 'no idle capacity is in pieces too small for the pods this pool runs');
    setText('sum-pending', gpus(pool.pending));
    setText('sum-pending-detail', pool.waiting + (pool.waiting === 1 ? ' pod waits' : ' pods wait') + ' for a place');

    const note = $('sim-note');
    if (pool.simulated > 0) {
      const all = pool.simulated === pool.nodes ? 'All ' + pool.nodes : pool.simulated + ' of ' + pool.nodes;
      note.textContent = all + ' nodes are simulated by vkube host: they run no containers, and ' +
          'their pods are reported as running (label ' + SIMULATED_LABEL + '=true).';
      note.hidden = false;
    } else {
      note.hidden = true;
    }
  }

  // ---- rendering: the tenants' table ---------------------------------------------------------
  const tenantRows = new Map();
  const COLUMNS = ['deserved', 'limit', 'allocated', 'bar', 'borrowed', 'lent', 'pending', 'fair', 'pods'];

  function tenantRow(name) {
    let r = tenantRows.get(name);
    if (r) return r;
    const tr = document.createElement('tr');
    tr.className = 'tenant-row';
    tr.dataset.tenant = name;
    const th = document.createElement('th');
    th.className = 'name';
    th.scope = 'row';
    th.append(swatch(name), document.createTextNode(name));
    tr.append(th);
    r = {tr, cells: {}};
    for (const c of COLUMNS) {
      const td = document.createElement('td');
      td.className = c;
      tr.append(td);
      r.cells[c] = td;
    }
    const track = document.createElement('div');
    track.className = 'track';
    r.fill = document.createElement('span');
    r.fill.className = 'fill';
    r.fill.style.background = colourOf(name);
    r.mark = document.createElement('span');
    r.mark.className = 'mark';
    track.append(r.fill, r.mark);
    r.cells.bar.append(track);
    tenantRows.set(name, r);
    return r;
  }

  function cell(td, text, muted) {
    if (td.textContent !== text) td.textContent = text;
    td.classList.toggle('zero', !!muted);
  }

  function renderTenants(tenants) {
    const body = $('tenants').tBodies[0];
    const keep = new Set(tenants.map((t) => t.name));
    for (const [name, r] of tenantRows) {
      if (!keep.has(name)) {
        r.tr.remove();
        tenantRows.delete(name);
      }
    }
    let empty = body.querySelector('tr.empty');
    if (!tenants.length) {
      if (!empty) {
        empty = document.createElement('tr');
        empty.className = 'empty';
        const td = document.createElement('td');
        td.colSpan = COLUMNS.length + 1;
        td.textContent = 'No tenants yet. Create one with `vkube create NAME --gpu-share deserved=N`.';
        empty.append(td);
        body.append(empty);
      }
      return;
    }
    if (empty) empty.remove();
    let prev = null;
    for (const t of tenants) {
      const r = tenantRow(t.name);
      const d = r.tr.dataset;
      d.allocatedGpus = exact(t.allocated);
      d.deservedGpus = exact(t.deserved);
      d.borrowedGpus = exact(t.borrowed);
      d.pendingGpus = exact(t.pending);
      d.lentGpus = exact(t.lent);
      cell(r.cells.deserved, gpus(t.deserved), t.deserved === 0);
      cell(r.cells.limit, t.limit < 0 ? 'none' : gpus(t.limit), t.limit < 0);
      cell(r.cells.allocated, gpus(t.allocated), t.allocated === 0);
      cell(r.cells.borrowed, gpus(t.borrowed), t.borrowed === 0);
      cell(r.cells.lent, gpus(t.lent), t.lent === 0);
      cell(r.cells.pending, gpus(t.pending) + (t.reclaiming > 0 ? ' (' + gpus(t.reclaiming) + ' reclaiming)' : ''),
           t.pending === 0);
      cell(r.cells.fair, t.fair === null ? '–' : gpus(t.fair), !t.fair);
      cell(r.cells.pods, t.running + (t.waiting ? ' · ' + t.waiting + ' waiting' : ''), t.running + t.waiting === 0);
      const scale = Math.max(t.allocated, t.deserved, 1);
      r.fill.style.width = (100 * t.allocated) / scale + '%';
      r.mark.hidden = t.deserved === 0;
      r.mark.style.left = (100 * t.deserved) / scale + '%';
      r.cells.bar.title = t.deserved > 0
          ? gpus(t.allocated) + ' of ' + gpus(t.deserved) + ' deserved GPUs (' + pct(t.allocated, t.deserved) + ')'
          : 'no guaranteed share: everything it holds is borrowed';
      const want = prev ? prev.nextSibling : body.firstChild;
      if (want !== r.tr) body.insertBefore(r.tr, want);
      prev = r.tr;
    }
  }

  // ---- rendering: nodes and GPUs (kept, and touched only where something changed) ------------
  const nodeEls = new Map();
  let nodeOrder = '';

  function gpuSignature(g) {
    if (g.mig.length) {
      return 'm' + g.mig.join(',') + '|' + [...g.slices].map(([i, s]) => i + ':' + s.holder).sort().join(',');
    }
    return g.shares.map((s) => s.holder + '=' + s.milli).join(',');
  }

  function drawGpu(el, g, node) {
    el.textContent = '';
    const holders = new Set();
    const tenants = new Set();
    let title = node.name + ' · GPU ' + g.index + (g.model ? ' · ' + g.model.replace(/^NVIDIA-/, '') : '');
    if (g.mig.length) {
      el.className = 'gpu mig';
      title += ' · MIG';
      g.mig.forEach((profile, i) => {
        const s = document.createElement('span');
        s.className = 'slice';
        s.style.flexGrow = String(migWidth(profile));
        const held = g.slices.get(i);
        if (held) {
          s.style.background = colourOf(held.holder);
          holders.add(held.holder);
          if (held.tenant) tenants.add(held.tenant);
        }
        title += '\n  ' + profile + ': ' + (held ? held.holder : 'free');
        el.append(s);
      });
    } else {
      let held = 0;
      for (const s of g.shares) {
        const seg = document.createElement('span');
        seg.className = 'seg';
        seg.style.height = s.milli / 10 + '%';
        seg.style.background = colourOf(s.holder);
        el.append(seg);
        held += s.milli;
        holders.add(s.holder);
        if (s.tenant) tenants.add(s.tenant);
        title += '\n  ' + s.holder + ': ' + (s.milli === 1000 ? 'whole GPU' : gpus(s.milli) + ' GPU');
      }
      el.className = 'gpu' + (held === 0 ? ' free' : held < 1000 ? ' partial' : '');
      if (held > 0 && held < 1000) title += '\n  idle: ' + gpus(1000 - held) + ' GPU';
      if (held === 0) title += '\n  idle';
    }
    if (tenants.size) el.dataset.tenants = [...tenants].sort().join(',');
    else delete el.dataset.tenants;
    el.title = title;
  }

  function nodeEl(node) {
    let n = nodeEls.get(node.name);
    if (n) return n;
    const el = document.createElement('div');
    el.className = 'node';
    el.dataset.node = node.name;
    const head = document.createElement('div');
    head.className = 'node-head';
    const name = document.createElement('span');
    name.className = 'node-name';
    name.textContent = node.name;
    const use = document.createElement('span');
    use.className = 'node-use';
    head.append(name, use);
    const model = document.createElement('div');
    model.className = 'node-model';
    model.textContent = node.model.replace(/^NVIDIA-/, '');
    el.title = node.name + (node.model ? ' · ' + node.model : '') + (node.simulated ? ' · simulated' : '');
    const cells = document.createElement('div');
    cells.className = 'gpus';
    el.append(head, model, cells);
    n = {el, use, cells, layout: '', gpus: new Map()};
    nodeEls.set(node.name, n);
    return n;
  }

  function renderNodes(nodes) {
    const box = $('nodes');
    const keep = new Set(nodes.map((n) => n.name));
    for (const [name, n] of nodeEls) {
      if (!keep.has(name)) {
        n.el.remove();
        nodeEls.delete(name);
      }
    }
    for (const node of nodes) {
      const n = nodeEl(node);
      const layout = node.gpus.map((g) => g.index).join(',');
      if (layout !== n.layout) {
        n.cells.textContent = '';
        n.gpus.clear();
        for (const g of node.gpus) {
          const el = document.createElement('div');
          el.dataset.gpu = String(g.index);
          n.cells.append(el);
          n.gpus.set(g.index, {el, sig: null});
        }
        n.layout = layout;
      }
      let cap = 0, held = 0;
      for (const g of node.gpus) {
        const c = n.gpus.get(g.index);
        const sig = gpuSignature(g);
        if (sig !== c.sig) {
          drawGpu(c.el, g, node);
          c.sig = sig;
        }
        if (!g.mig.length) {
          cap += 1000;
          held += Math.min(1000, g.shares.reduce((s, x) => s + x.milli, 0));
        }
      }
      const use = gpus(held) + '/' + gpus(cap);
      if (n.use.textContent !== use) n.use.textContent = use;
      n.el.classList.toggle('busy', cap > 0 && held >= cap);
    }
    const order = nodes.map((n) => n.name).join('\n');
    if (order !== nodeOrder) {
      const frag = document.createDocumentFragment();
      for (const node of nodes) frag.append(nodeEls.get(node.name).el);
      box.append(frag);
      nodeOrder = order;
    }
    box.classList.toggle('dense', nodes.length > 64);
    box.classList.toggle('roomy', nodes.length <= 16);
    let empty = box.querySelector('.empty');
    if (!nodes.length && !empty) {
      empty = document.createElement('p');
      empty.className = 'empty';
      empty.textContent = 'The host has no nodes.';
      box.append(empty);
    } else if (nodes.length && empty) {
      empty.remove();
    }
    setText('nodes-hint', nodes.length > 64
        ? 'one cell per GPU; hover a cell for who holds it'
        : 'one cell per GPU, filled by the tenants holding it (shares stacked by thousandths); hover for details');
  }

  function renderLegend(tenants, nodes) {
    const holders = new Set(tenants.map((t) => t.name));
    for (const n of nodes) {
      for (const g of n.gpus) {
        for (const s of g.shares) holders.add(s.holder);
        for (const s of g.slices.values()) holders.add(s.holder);
      }
    }
    const sig = [...holders].sort().join(',');
    const box = $('nodes-legend-tenants');
    if (box.dataset.sig === sig) return;
    box.dataset.sig = sig;
    box.textContent = '';
    for (const h of [...holders].sort()) box.append(legendKey(h));
  }

  // ---- the history (kept in this page only) --------------------------------------------------
  const history = [];

  function sample(model) {
    const now = Date.now();
    const tenants = {};
    for (const t of model.tenants) {
      tenants[t.name] = {a: t.allocated, d: t.deserved, b: t.borrowed, l: t.lent, p: t.pending};
    }
    history.push({t: now, cap: model.pool.capacity, alloc: model.pool.allocated,
                  frag: model.pool.stranded, tenants});
    while (history.length && history[0].t < now - HISTORY_MS) history.shift();
  }

  function el(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function niceStep(max, ticks) {
    const raw = max / ticks;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }

  // One SVG, four panels sharing the time axis: the pool, allocation per tenant against its
  // deserved share (dashed), borrowed (up) and lent (down), and pending demand.
  let chart = null;

  function renderHistory(tenantNames) {
    const box = $('history');
    if (!chart) {
      chart = el('svg', {role: 'img', 'aria-label': 'GPU allocation over time'});
      box.append(chart);
    }
    const W = Math.max(480, box.clientWidth || 900);
    const L = 52, R = 16, TITLE = 18, GAP = 14;
    const panels = [
      {key: 'pool', title: 'Pool: GPUs allocated (area) of capacity (dashed), stranded (orange)', h: 84},
      {key: 'alloc', title: 'GPUs allocated per tenant (solid) against its deserved share (dashed)', h: 170},
      {key: 'borrow', title: 'GPUs borrowed (above 0) and lent (below 0)', h: 110},
      {key: 'pending', title: 'Pending demand (GPUs)', h: 84},
    ];
    const H = panels.reduce((s, p) => s + TITLE + p.h + GAP, 0) + 22;
    chart.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    chart.setAttribute('width', W);
    chart.setAttribute('height', H);
    const g = document.createDocumentFragment();
    const last = history.length ? history[history.length - 1].t : Date.now();
    const t0 = history.length ? Math.max(history[0].t, last - HISTORY_MS) : last - 120000;
    const t1 = Math.max(last, t0 + 120000);
    const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);

    // Time ticks: every 1, 2, 5, 10 minutes, whichever gives at most 8.
    const span = t1 - t0;
    const stepMin = [0.5, 1, 2, 5, 10].find((m) => span / (m * 60000) <= 8) || 10;
    const step = stepMin * 60000;
    const ticks = [];
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) ticks.push(t);

    let top = 0;
    for (const p of panels) {
      const y0 = top + TITLE, y1 = y0 + p.h;
      g.append(el('text', {x: L, y: top + 12, class: 'ptitle'}, p.title));
      const series = [];  // {values: [v|undefined per sample], colour, dash, area}
      if (p.key === 'pool') {
        series.push({values: history.map((s) => s.alloc), colour: '#6b7c93', area: true});
        series.push({values: history.map((s) => s.cap), colour: '#1f2937', dash: true});
        series.push({values: history.map((s) => s.frag), colour: '#e8590c'});
      } else {
        for (const name of tenantNames) {
          const c = colourOf(name);
          const v = (k) => history.map((s) => (s.tenants[name] ? s.tenants[name][k] : undefined));
          if (p.key === 'alloc') {
            series.push({values: v('d'), colour: c, dash: true});
            series.push({values: v('a'), colour: c});
          } else if (p.key === 'borrow') {
            series.push({values: v('b'), colour: c});
            series.push({values: v('l').map((a) => (a === undefined ? a : -a)), colour: c, dash: true});
          } else {
            series.push({values: v('p'), colour: c});
          }
        }
      }
      let lo = 0, hi = 0;
      for (const s of series) {
        for (const v of s.values) {
          if (v === undefined) continue;
          if (v > hi) hi = v;
          if (v < lo) lo = v;
        }
      }
      if (hi - lo < 1000) hi = lo + 1000;  // at least one GPU of range
      const stepY = niceStep(hi - lo, p.h > 100 ? 4 : 2);
      hi = Math.ceil(hi / stepY) * stepY;
      lo = Math.floor(lo / stepY) * stepY;
      const y = (v) => y1 - ((v - lo) / (hi - lo)) * p.h;
      g.append(el('rect', {x: L, y: y0, width: W - L - R, height: p.h, class: 'plot'}));
      for (let v = lo; v <= hi + 1e-6; v += stepY) {
        g.append(el('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), class: v === 0 ? 'zero' : 'grid'}));
        g.append(el('text', {x: L - 6, y: y(v) + 4, class: 'ylabel'}, gpus(v)));
      }
      for (const t of ticks) g.append(el('line', {x1: x(t), x2: x(t), y1: y0, y2: y1, class: 'grid'}));
      if (!history.length || (p.key !== 'pool' && !tenantNames.length)) {
        g.append(el('text', {x: (L + W - R) / 2, y: (y0 + y1) / 2 + 4, class: 'nodata'},
                     history.length ? 'no tenants' : 'waiting for the first sample'));
      }
      for (const s of series) drawSeries(g, s, x, y, lo);
      top = y1 + GAP;
    }
    for (const t of ticks) {
      g.append(el('text', {x: x(t), y: top + 10, class: 'xlabel'}, stepMin < 1 ? clock(t) : clock(t).slice(0, 5)));
    }
    chart.replaceChildren(g);
  }

  function drawSeries(g, s, x, y, lo) {
    let d = '', run = [];
    const flush = () => {
      if (!run.length) return;
      if (s.area) {
        d += 'M' + run[0][0] + ',' + y(lo) + run.map(([px, py]) => 'L' + px + ',' + py).join('') +
             'L' + run[run.length - 1][0] + ',' + y(lo) + 'Z';
      } else {
        d += run.map(([px, py], i) => (i ? 'L' : 'M') + px + ',' + py).join('');
      }
      run = [];
    };
    s.values.forEach((v, i) => {
      if (v === undefined) return flush();
      run.push([x(history[i].t).toFixed(1), y(v).toFixed(1)]);
    });
    flush();
    if (!d) return;
    const attrs = {d, fill: s.area ? s.colour : 'none', stroke: s.colour,
                   'stroke-width': s.area ? 1 : 2, class: s.area ? 'area' : 'line'};
    if (s.dash) attrs['stroke-dasharray'] = '6 4';
    g.append(el('path', attrs));
    // The newest value as a dot, so a single sample (or a series that just began) shows.
    let i = s.values.length - 1;
    if (!s.area && s.values[i] !== undefined && !s.dash) {
      g.append(el('circle', {cx: x(history[i].t), cy: y(s.values[i]), r: 2.5, fill: s.colour}));
    }
  }

  function renderHistoryLegend(tenantNames) {
    const box = $('history-legend');
    const sig = tenantNames.join(',');
    if (box.dataset.sig === sig) return;
    box.dataset.sig = sig;
    box.textContent = '';
    for (const name of tenantNames) box.append(legendKey(name));
    const hint = document.createElement('span');
    hint.className = 'key muted';
    hint.textContent = 'solid: allocated / borrowed / pending · dashed: deserved / lent';
    box.append(hint);
  }

  // ---- the loop ------------------------------------------------------------------------------
  let lastModel = null;

  async function refresh() {
    const started = Date.now();
    const results = await Promise.allSettled([
      get(URLS.nodes), get(URLS.pods), get(URLS.namespaces), get(URLS.metrics, true),
    ]);
    const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
    const err = $('error');
    // Nodes and pods are needed to draw anything; without /metrics the page falls back to what it
    // can count from the objects (and says the metrics are missing).
    if (results[0].status === 'fulfilled' && results[1].status === 'fulfilled') {
      let metrics = new Map();
      if (results[3].status === 'fulfilled') metrics = parseMetrics(results[3].value);
      const ns = results[2].status === 'fulfilled' ? results[2].value : {items: []};
      try {
        const t = performance.now();
        const model = buildModel(results[0].value, results[1].value, ns, metrics);
        render(model);
        // How long reading and drawing took, for a look at large pools (and tests).
        document.body.dataset.renderMs = (performance.now() - t).toFixed(0);
        lastModel = model;
        if (!failed.length) document.body.dataset.ready = 'true';
      } catch (e) {
        failed.push(new FetchError('', -1, 'cannot read the answers: ' + e.message));
      }
    }
    if (failed.length) {
      err.textContent = describeErrors(failed);
      err.hidden = false;
      document.body.classList.add('stale');
      setText('updated', lastModel ? 'Last good data ' + clock(lastGood) + ' · retrying'
                                   : 'No data yet · retrying');
    } else {
      err.hidden = true;
      err.textContent = '';
      document.body.classList.remove('stale');
      lastGood = Date.now();
      setText('updated', 'Updated ' + clock(lastGood));
    }
    setTimeout(refresh, Math.max(200, REFRESH_MS - (Date.now() - started)));
  }
  let lastGood = 0;

  function render(model) {
    sample(model);
    const names = model.tenants.map((t) => t.name);
    names.forEach(colourOf);  // sorted order: the first page load gives the same slots each time
    renderSummary(model.pool);
    renderTenants(model.tenants);
    renderLegend(model.tenants, model.nodes);
    renderNodes(model.nodes);
    renderHistoryLegend(names);
    renderHistory(names);
  }

  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => lastModel && renderHistory(lastModel.tenants.map((t) => t.name)), 150);
  });

  document.addEventListener('DOMContentLoaded', refresh);

  window.vkubeDashboard = {parseMetrics, parseAllocation, buildModel, history};
})();
