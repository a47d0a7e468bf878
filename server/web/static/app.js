// geoflow's web UI: the maps of a run's units and of dead letters, drawing a box to
// rerun an area, and the buttons that call the JSON API. Pages are rendered by the
// server; this module only enhances them. Text that came from a server is only ever set
// with textContent, never parsed as HTML.
import { Map, Popup, NavigationControl, ScaleControl } from './vendor/maplibre-gl/maplibre-gl.mjs';

const stateColor = ['match', ['get', 'state'],
  'done', '#2e7d32', 'running', '#1565c0', 'failed', '#c62828', 'interrupted', '#ef6c00', '#9e9e9e'];
const statusColor = ['match', ['get', 'status'],
  'open', '#c62828', 'replayed', '#2e7d32', '#9e9e9e'];

// api sends a request to geoflow's API and returns the JSON answer, or throws an Error
// with the server's own message.
export async function api(method, url, body) {
  const opts = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(url, opts);
  let data = null;
  try { data = await resp.json(); } catch { /* not JSON */ }
  if (!resp.ok) {
    throw new Error((data && data.error) || `${method} ${url}: ${resp.status} ${resp.statusText}`);
  }
  return data;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const fmt = (n) => (n === undefined || n === null ? '' : Number(n).toLocaleString('en'));

function table(rows) {
  const t = el('table', { class: 'kv' });
  for (const [k, v] of rows) {
    if (v === undefined || v === null || v === '') continue;
    t.append(el('tr', {}, el('th', {}, k), el('td', {}, v)));
  }
  return t;
}

// A graticule of lines every step degrees over bounds [w, s, e, n], the step chosen so
// that a handful of lines show: there is no basemap offline, and lines of longitude and
// latitude tell where the boxes are.
function graticule(b) {
  const span = Math.max(b[2] - b[0], b[3] - b[1], 1e-6);
  const steps = [0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30];
  const step = steps.find((s) => span / s <= 8) || 30;
  const lines = [];
  const w = Math.max(-180, Math.floor(b[0] / step) * step), e = Math.min(180, Math.ceil(b[2] / step) * step);
  const s = Math.max(-85, Math.floor(b[1] / step) * step), n = Math.min(85, Math.ceil(b[3] / step) * step);
  for (let x = w; x <= e + step / 2; x += step) lines.push([[x, s], [x, n]]);
  for (let y = s; y <= n + step / 2; y += step) lines.push([[w, y], [e, y]]);
  return { type: 'FeatureCollection', features: lines.map((c) => ({ type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: c } })) };
}

function extentOf(features) {
  let b = null;
  const add = (c) => {
    if (typeof c[0] === 'number') {
      b = b ? [Math.min(b[0], c[0]), Math.min(b[1], c[1]), Math.max(b[2], c[0]), Math.max(b[3], c[1])] : [c[0], c[1], c[0], c[1]];
    } else c.forEach(add);
  };
  for (const f of features) add(f.geometry.coordinates);
  return b;
}

function centroids(fc) {
  return {
    type: 'FeatureCollection',
    features: fc.features.map((f) => {
      const b = extentOf([f]);
      return { type: 'Feature', id: f.id, properties: f.properties, geometry: { type: 'Point', coordinates: [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2] } };
    }),
  };
}

const emptyFC = () => ({ type: 'FeatureCollection', features: [] });

// baseStyle is the map's style: a plain background, the flow's own tiles when it has a
// tile task (data-basemap), a graticule and the extent of what is drawn.
function baseStyle(container) {
  const sources = {
    graticule: { type: 'geojson', data: emptyFC() },
    extent: { type: 'geojson', data: emptyFC() },
  };
  const tiles = [];
  if (container.dataset.basemap) {
    const [minzoom, maxzoom] = (container.dataset.basemapZoom || '0,22').split(',').map(Number);
    sources.basemap = { type: 'raster', tiles: [container.dataset.basemap], tileSize: 256, minzoom, maxzoom };
    tiles.push({ id: 'basemap', type: 'raster', source: 'basemap', paint: { 'raster-opacity': 0.6, 'raster-saturation': -1 } }); // grey: the colours are the states'
  }
  return {
    version: 8,
    sources,
    layers: [
      { id: 'background', type: 'background', paint: { 'background-color': '#f3f1ec' } },
      ...tiles,
      { id: 'graticule', type: 'line', source: 'graticule', paint: { 'line-color': '#c9c4b8', 'line-width': 1 } },
      { id: 'extent', type: 'line', source: 'extent', paint: { 'line-color': '#6d6a63', 'line-width': 1.5, 'line-dasharray': [3, 2] } },
    ],
  };
}

// The colours of a run's changes: inserted green, updated orange, deleted a dashed red
// outline where the feature was.
const changeColor = ['match', ['get', 'gf_change'], 'inserted', '#2e7d32', 'updated', '#ef6c00', '#c62828'];
const changeLayers = ['changes-fill', 'changes-line', 'changes-point'];
const isPolygon = ['==', ['geometry-type'], 'Polygon'];
const isLine = ['==', ['geometry-type'], 'LineString'];
const isPoint = ['==', ['geometry-type'], 'Point'];

function addChangeLayers(m) {
  m.addSource('changes', { type: 'geojson', data: emptyFC() });
  const deleted = ['==', ['get', 'gf_change'], 'deleted'];
  m.addLayer({ id: 'changes-fill', type: 'fill', source: 'changes', filter: ['all', isPolygon, ['!', deleted]], paint: { 'fill-color': changeColor, 'fill-opacity': 0.55 } });
  m.addLayer({ id: 'changes-line', type: 'line', source: 'changes', filter: ['any', isLine, ['all', isPolygon, deleted]],
    paint: { 'line-color': changeColor, 'line-width': 2, 'line-dasharray': ['case', deleted, ['literal', [2, 1]], ['literal', [1, 0]]] } });
  m.addLayer({ id: 'changes-point', type: 'circle', source: 'changes', filter: isPoint,
    paint: { 'circle-radius': 4, 'circle-color': ['case', deleted, '#fff', changeColor], 'circle-stroke-color': changeColor, 'circle-stroke-width': 1.5 } });
}

// countDrawnChanges counts the changed features drawn, by kind, into data-drawn-inserted
// (-updated, -deleted): what a test compares with geoflow changes RUN.
function countDrawnChanges(m, c) {
  const seen = { inserted: new Set(), updated: new Set(), deleted: new Set() };
  for (const f of m.queryRenderedFeatures({ layers: changeLayers })) {
    const p = f.properties;
    if (seen[p.gf_change]) seen[p.gf_change].add(`${p.gf_table}/${p.gf_key}`);
  }
  for (const [k, v] of Object.entries(seen)) c.dataset[`drawn${k[0].toUpperCase()}${k.slice(1)}`] = String(v.size);
}

function showChange(e, m) {
  const f = e.features[0];
  if (!f) return;
  const p = f.properties;
  const rows = [['change', p.gf_change], ['table', p.gf_table], ['task', p.gf_task], ['key', p.gf_key]];
  for (const [k, v] of Object.entries(p)) if (!k.startsWith('gf_')) rows.push([k, v]);
  new Popup({ maxWidth: '420px' }).setLngLat(e.lngLat).setDOMContent(el('div', { class: 'unit' }, el('h3', {}, `${p.gf_change} · ${p.gf_key}`), table(rows))).addTo(m);
}

// TableMap is a table's page map: the table's features as vector tiles from the store
// (or a tile pyramid's tiles), the units of its last run beneath, a panel with a
// clicked feature's attributes and versions, and "as of run N" for history tables.
class TableMap {
  constructor(container) {
    this.container = container;
    const d = container.dataset;
    this.table = d.table;
    this.map = new Map({
      container, style: baseStyle(container), center: [0, 20], zoom: 1, attributionControl: false,
      fadeDuration: 0, dragRotate: false, pitchWithRotate: false, renderWorldCopies: false,
    });
    this.map.addControl(new NavigationControl({ showCompass: false }));
    this.map.addControl(new ScaleControl());
    this.map.on('moveend', () => this.updateGraticule());
    if (d.extent) {
      const b = JSON.parse(d.extent);
      this.map.fitBounds([[b[0], b[1]], [b[2], b[3]]], { padding: 30, duration: 0, maxZoom: 17 });
    }
    this.map.on('load', () => this.setup());
  }

  tileURL(asof) {
    const u = new URL(`/${this.container.dataset.kind === 'tiles' ? 'rt' : 'vt'}/${encodeURIComponent(this.table)}/{z}/{x}/{y}${this.container.dataset.kind === 'tiles' ? '' : '.mvt'}`, location.href);
    if (asof) u.searchParams.set('asof', asof);
    return u.href.replace(/%7B/g, '{').replace(/%7D/g, '}');
  }

  async setup() {
    const m = this.map, d = this.container.dataset;
    this.updateGraticule();
    if (d.kind === 'tiles') {
      const [minzoom, maxzoom] = (d.zoom || '0,22').split(',').map(Number);
      m.addSource('table', { type: 'raster', tiles: [this.tileURL()], tileSize: 256, minzoom, maxzoom });
      m.addLayer({ id: 'table-raster', type: 'raster', source: 'table' });
    } else {
      m.addSource('table', { type: 'vector', tiles: [this.tileURL(d.asof)], minzoom: 0, maxzoom: 16 });
      const layer = { source: 'table', 'source-layer': this.table.split('.').pop() };
      m.addLayer({ id: 'table-fill', type: 'fill', ...layer, filter: isPolygon, paint: { 'fill-color': '#5c6bc0', 'fill-opacity': ['case', ['boolean', ['feature-state', 'picked'], false], 0.8, 0.4] } });
      m.addLayer({ id: 'table-line', type: 'line', ...layer, filter: ['any', isPolygon, isLine], paint: { 'line-color': '#283593', 'line-width': ['case', ['boolean', ['feature-state', 'picked'], false], 3, 0.8] } });
      m.addLayer({ id: 'table-point', type: 'circle', ...layer, filter: isPoint, paint: { 'circle-radius': 4, 'circle-color': '#5c6bc0', 'circle-stroke-color': '#fff', 'circle-stroke-width': 1 } });
      for (const id of ['table-fill', 'table-point', 'table-line']) {
        m.on('click', id, (e) => this.clicked(e));
        m.on('mouseenter', id, () => { m.getCanvas().style.cursor = 'pointer'; });
        m.on('mouseleave', id, () => { m.getCanvas().style.cursor = ''; });
      }
      const sel = document.getElementById('asof');
      if (sel) sel.addEventListener('change', () => this.asOf(sel.value));
      this.downloads();
    }
    if (d.unitsUrl) {
      try {
        const fc = await api('GET', d.unitsUrl);
        m.addSource('units', { type: 'geojson', data: { type: 'FeatureCollection', features: fc.features.filter((f) => !f.properties.planner) } });
        m.addLayer({ id: 'units', type: 'line', source: 'units', paint: { 'line-color': stateColor, 'line-width': 1, 'line-opacity': 0.7 } }, m.getLayer('table-fill') ? 'table-fill' : undefined);
      } catch (err) { this.note(err.message); }
    }
    m.once('idle', () => {
      d.drawnMs = String(Math.round(performance.now()));
      d.ready = '1';
      this.countDrawn();
    });
    m.on('idle', () => this.countDrawn());
  }

  countDrawn() {
    if (this.container.dataset.kind === 'tiles') return;
    const ids = new Set(this.map.queryRenderedFeatures({ layers: ['table-fill', 'table-line', 'table-point'] }).map((f) => f.id));
    this.container.dataset.features = String(ids.size);
  }

  note(text) {
    const n = document.getElementById(this.container.id + '-note');
    if (n) n.textContent = text;
  }

  updateGraticule() {
    const src = this.map.getSource('graticule');
    if (!src) return;
    const b = this.map.getBounds();
    src.setData(graticule([b.getWest(), b.getSouth(), b.getEast(), b.getNorth()]));
  }

  // asOf draws the table as it was after run (a history table), or now when run is ''.
  asOf(run) {
    this.container.dataset.asof = run;
    this.map.getSource('table').setTiles([this.tileURL(run)]);
    const u = new URL(location.href);
    if (run) u.searchParams.set('asof', run); else u.searchParams.delete('asof');
    history.replaceState(null, '', u);
    this.downloads();
  }

  downloads() {
    const asof = this.container.dataset.asof;
    for (const a of document.querySelectorAll('a.download')) {
      const u = new URL(`/api/tables/${encodeURIComponent(this.table)}/features`, location.href);
      u.searchParams.set('format', a.dataset.format);
      if (asof) u.searchParams.set('asof', asof);
      if (a.classList.contains('view')) {
        a.onclick = () => {
          const b = this.map.getBounds();
          u.searchParams.set('bbox', [Math.max(-180, b.getWest()), Math.max(-90, b.getSouth()), Math.min(180, b.getEast()), Math.min(90, b.getNorth())].map((x) => x.toFixed(6)).join(','));
          a.href = u.pathname + u.search;
        };
      } else a.href = u.pathname + u.search;
    }
  }

  async clicked(e) {
    const f = e.features[0];
    // A polygon is both its fill and its outline: one click, one answer.
    if (!f || this.lastClick === e.originalEvent) return;
    this.lastClick = e.originalEvent;
    const m = this.map, layer = { source: 'table', sourceLayer: this.table.split('.').pop() };
    if (this.picked !== undefined) m.setFeatureState({ ...layer, id: this.picked }, { picked: false });
    this.picked = f.id;
    m.setFeatureState({ ...layer, id: f.id }, { picked: true });
    const aside = document.getElementById('feature');
    aside.hidden = false;
    const rows = Object.entries(f.properties).filter(([k]) => !k.startsWith('gf_'));
    const head = el('h3', {}, f.properties.gf_feature_id ? `feature ${f.properties.gf_feature_id}` : `feature ${f.id}`);
    const versions = el('div', { class: 'versions' }, 'loading its history…');
    aside.replaceChildren(head, table(rows), el('p', { class: 'hint' }, `written by run ${f.properties.gf_run_id}`), versions);
    try {
      const d = await api('GET', `/api/tables/${encodeURIComponent(this.table)}/features/${f.id}`);
      versions.replaceChildren(...featureVersions(d));
    } catch (err) { versions.textContent = err.message; }
  }
}

// featureVersions lists a feature's versions (a history table) or says who wrote it.
function featureVersions(d) {
  const vs = d.versions && d.versions.length ? d.versions : d.features;
  if (!vs || vs.length < 2) {
    const f = d.features[0];
    return [table([['run', el('a', { href: `/runs/${f.run}` }, `run ${f.run}`)], ['fetched', f.fetched_at], ['key', f.key || '']])];
  }
  const ol = el('ol', { class: 'versions' });
  for (const v of vs) {
    const life = v.valid_to ? `${v.valid_from} → ${v.valid_to}` : `${v.valid_from || v.fetched_at} → now`;
    const what = v.closed_run ? ` · closed by run ${v.closed_run}` : '';
    const changed = Object.entries(v.properties || {}).map(([k, x]) => `${k}=${x}`).join(', ');
    ol.append(el('li', { class: v.valid_to ? '' : 'current' }, el('a', { href: `/runs/${v.run}` }, `run ${v.run}`), ` · ${life}${what}`, el('br'), el('span', { class: 'muted' }, changed)));
  }
  return [el('h4', {}, `${vs.length} versions`), ol];
}

// GeoMap is one of the UI's maps: a source of boxes (a run's units or dead letters)
// drawn over a graticule, with a popup on click and a tool to draw a box.
class GeoMap {
  constructor(container) {
    this.container = container;
    this.kind = container.dataset.unitsUrl ? 'units' : (container.dataset.featuresUrl ? 'dlq' : 'none');
    this.url = container.dataset.unitsUrl || container.dataset.featuresUrl || '';
    this.fitted = false;
    this.map = new Map({
      container, style: baseStyle(container), center: [0, 20], zoom: 1, attributionControl: false,
      fadeDuration: 0, dragRotate: false, pitchWithRotate: false, renderWorldCopies: false,
    });
    this.map.addControl(new NavigationControl({ showCompass: false }));
    this.map.addControl(new ScaleControl());
    this.loaded = new Promise((resolve) => this.map.on('load', resolve));
    this.map.on('moveend', () => this.updateGraticule());
    this.loaded.then(() => this.setup());
  }

  async setup() {
    const m = this.map;
    m.addSource('boxes', { type: 'geojson', data: emptyFC() });
    m.addSource('dots', { type: 'geojson', data: emptyFC() });
    m.addSource('draw', { type: 'geojson', data: emptyFC() });
    const color = this.kind === 'dlq' ? statusColor : stateColor;
    // Units that planned others (a layer's count, a tile that split) are outlined only:
    // their children cover the same ground and carry the state that matters.
    const leaf = ['!', ['to-boolean', ['get', 'planner']]];
    m.addLayer({ id: 'boxes-fill', type: 'fill', source: 'boxes', filter: leaf, paint: { 'fill-color': color, 'fill-opacity': 0.35 } });
    m.addLayer({ id: 'boxes-line', type: 'line', source: 'boxes', filter: leaf, paint: { 'line-color': color, 'line-width': 1 } });
    m.addLayer({ id: 'planners', type: 'line', source: 'boxes', filter: ['!', leaf], paint: { 'line-color': '#6d6a63', 'line-width': 1, 'line-dasharray': [1, 2] } });
    // Dead units (and open dead letters) are also a dot, which stays clickable however
    // small their box is at this zoom: "a red dot you can click to see the error".
    m.addLayer({
      id: 'dots', type: 'circle', source: 'dots',
      filter: this.kind === 'dlq' ? ['==', ['get', 'status'], 'open'] : ['==', ['get', 'state'], 'failed'],
      paint: { 'circle-radius': 5, 'circle-color': '#c62828', 'circle-stroke-color': '#fff', 'circle-stroke-width': 1.5 },
    });
    if (this.container.dataset.changesUrl) addChangeLayers(m);
    m.addLayer({ id: 'draw-fill', type: 'fill', source: 'draw', paint: { 'fill-color': '#1565c0', 'fill-opacity': 0.12 } });
    m.addLayer({ id: 'draw-line', type: 'line', source: 'draw', paint: { 'line-color': '#1565c0', 'line-width': 2, 'line-dasharray': [2, 1] } });
    // A changed feature is clicked rather than the unit beneath it.
    const changes = this.container.dataset.changesUrl ? changeLayers : [];
    for (const layer of ['boxes-fill', 'dots', ...changes]) {
      m.on('click', layer, (e) => {
        if (this.drawing) return;
        if (changes.includes(layer)) showChange(e, m);
        else if (!changes.length || !m.queryRenderedFeatures(e.point, { layers: changes }).length) this.clicked(e);
      });
      m.on('mouseenter', layer, () => { if (!this.drawing) m.getCanvas().style.cursor = 'pointer'; });
      m.on('mouseleave', layer, () => { if (!this.drawing) m.getCanvas().style.cursor = ''; });
    }
    await this.refresh();
  }

  updateGraticule() {
    const src = this.map.getSource('graticule');
    if (!src) return;
    const b = this.map.getBounds();
    src.setData(graticule([b.getWest(), b.getSouth(), b.getEast(), b.getNorth()]));
  }

  // refresh fetches the boxes again and draws them; the first time, it fits the map to
  // them and, once the map has drawn them, sets data-ready (and the time it took since
  // the page started loading, data-drawn-ms) for tests and measurements.
  async refresh() {
    let fc = emptyFC();
    const note = document.getElementById(this.container.id + '-note');
    if (this.url) {
      try {
        fc = await api('GET', this.url);
      } catch (err) {
        if (note) note.textContent = err.message;
        this.container.dataset.error = err.message;
      }
    }
    this.fc = fc;
    if (this.container.dataset.changesUrl) await this.refreshChanges();
    this.map.getSource('boxes').setData(fc);
    this.map.getSource('dots').setData(centroids(fc));
    const ext = extentOf(fc.features);
    if (ext) {
      this.map.getSource('extent').setData({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[ext[0], ext[1]], [ext[2], ext[1]], [ext[2], ext[3]], [ext[0], ext[3]], [ext[0], ext[1]]]] } });
    }
    if (!this.fitted) {
      this.fitted = true;
      if (ext) this.map.fitBounds([[ext[0], ext[1]], [ext[2], ext[3]]], { padding: 30, duration: 0, maxZoom: 16 });
      this.updateGraticule();
    }
    if (note && fc.total !== undefined) {
      const parts = [`${fmt(fc.features.length)} drawn`];
      if (fc.truncated) parts.push(`of ${fmt(fc.total)} (the first ones only: narrow by task)`);
      if (fc.not_spatial) parts.push(`${fmt(fc.not_spatial)} without a box`);
      note.textContent = parts.join(', ');
    }
    this.container.dataset.features = String(fc.features.length);
    await new Promise((resolve) => this.map.once('idle', resolve));
    if (!this.container.dataset.ready) {
      this.container.dataset.drawnMs = String(Math.round(performance.now()));
      this.container.dataset.ready = '1';
    }
    const key = (f) => (this.kind === 'dlq' ? String(f.properties.id) : `${f.properties.task}/${f.properties.key}`);
    this.container.dataset.rendered = String(new Set(this.map.queryRenderedFeatures({ layers: ['boxes-fill'] }).map(key)).size);
    if (this.container.dataset.changesUrl) countDrawnChanges(this.map, this.container);
  }

  // refreshChanges draws what the run inserted, updated and deleted, and says how many
  // of each in the legend; the first time, the map fits them rather than the units.
  async refreshChanges() {
    let fc;
    try {
      fc = await api('GET', this.container.dataset.changesUrl);
    } catch (err) {
      this.container.dataset.error = err.message;
      return;
    }
    this.changes = fc;
    this.map.getSource('changes').setData(fc);
    const legend = document.getElementById(this.container.id + '-changes');
    const total = Object.values(fc.counts || {}).reduce((a, b) => a + b, 0);
    // The units step back when there are changes to see: they are the frame, not the news.
    if (total > 0) this.map.setPaintProperty('boxes-fill', 'fill-opacity', 0.1);
    if (legend) {
      legend.hidden = total === 0;
      for (const k of ['inserted', 'updated', 'deleted']) {
        const n = legend.querySelector(`.count-${k}`);
        if (n) n.textContent = fmt((fc.counts || {})[k] || 0);
      }
    }
    for (const k of ['inserted', 'updated', 'deleted']) this.container.dataset[`changes${k[0].toUpperCase()}${k.slice(1)}`] = String((fc.counts || {})[k] || 0);
    if (!this.fitted && fc.features.length) {
      const ext = extentOf(fc.features.filter((f) => f.geometry));
      if (ext) {
        this.fitted = true;
        this.map.fitBounds([[ext[0], ext[1]], [ext[2], ext[3]]], { padding: 30, duration: 0, maxZoom: 17 });
        this.updateGraticule();
      }
    }
  }

  clicked(e) {
    if (this.drawing || !e.features.length) return;
    const p = e.features[0].properties;
    const body = this.kind === 'dlq' ? entrySummary(p) : unitDetails(p);
    new Popup({ maxWidth: '420px' }).setLngLat(e.lngLat).setDOMContent(body).addTo(this.map);
    if (this.kind === 'dlq') showEntry(p.id);
  }

  // startDraw lets the next drag on the map draw a box; done gets [w, s, e, n], within
  // the world the server takes (±180 by ±85.05, where Web Mercator ends: the map shows
  // empty space beyond at low zoom) and to 6 decimals, as the dialog shows it. A click,
  // or a drag too thin to keep a width and a height at 6 decimals, draws nothing: the
  // next drag is the box.
  startDraw(done) {
    const m = this.map;
    this.drawing = true;
    m.dragPan.disable();
    m.boxZoom.disable();
    m.getCanvas().style.cursor = 'crosshair';
    let start = null;
    const clamp = (x, lim) => Number(Math.max(-lim, Math.min(lim, x)).toFixed(6));
    const box = (a, b) => {
      const [x1, x2] = [clamp(a.lng, 180), clamp(b.lng, 180)], [y1, y2] = [clamp(a.lat, 85.05), clamp(b.lat, 85.05)];
      return [Math.min(x1, x2), Math.min(y1, y2), Math.max(x1, x2), Math.max(y1, y2)];
    };
    const move = (e) => { if (start) this.showBox(box(start, e.lngLat)); };
    const down = (e) => { e.preventDefault(); start = e.lngLat; };
    const up = (e) => {
      if (!start) return;
      const b = box(start, e.lngLat);
      start = null;
      if (!(b[0] < b[2] && b[1] < b[3])) {
        this.map.getSource('draw').setData(emptyFC());
        return;
      }
      m.off('mousedown', down); m.off('mousemove', move); m.off('mouseup', up);
      m.dragPan.enable(); m.boxZoom.enable();
      m.getCanvas().style.cursor = '';
      this.drawing = false;
      this.showBox(b);
      done(b);
    };
    m.on('mousedown', down); m.on('mousemove', move); m.on('mouseup', up);
  }

  showBox(b) {
    this.map.getSource('draw').setData({ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[b[0], b[1]], [b[2], b[1]], [b[2], b[3]], [b[0], b[3]], [b[0], b[1]]]] } });
  }

  viewBBox() {
    const b = this.map.getBounds();
    return [Math.max(-180, b.getWest()), Math.max(-90, b.getSouth()), Math.min(180, b.getEast()), Math.min(90, b.getNorth())];
  }
}

function unitDetails(p) {
  const div = el('div', { class: 'unit' }, el('h3', {}, `${p.task} · ${p.key}`));
  div.append(table([
    ['state', p.state === 'failed' ? 'dead' : p.state],
    ['attempts', fmt(p.attempts)],
    ['requests', fmt(p.requests)],
    ['executed by', p.worker || ''],
    ['inserted', fmt(p.features_inserted)],
    ['already present', fmt(p.features_skipped - (p.features_overlap || 0))],
    ['returned twice', fmt(p.features_overlap || 0)],
    ['updated', fmt(p.features_updated)],
    ['rejected', p.features_rejected ? fmt(p.features_rejected) : ''],
    ['bytes', fmt(p.bytes)],
    ['started', p.started_at && p.started_at !== 'null' ? p.started_at : ''],
    ['finished', p.finished_at && p.finished_at !== 'null' ? p.finished_at : ''],
    ['error', p.error || ''],
  ]));
  if (p.dead_letter) {
    const holder = el('div', { class: 'dl' }, 'loading the dead letter…');
    div.append(holder);
    api('GET', `/api/dlq/${p.dead_letter}`).then((e) => holder.replaceChildren(entryDetails(e))).catch((err) => { holder.textContent = err.message; });
  }
  return div;
}

function entrySummary(p) {
  return el('div', { class: 'unit' }, el('h3', {}, `dead letter ${p.id}`),
    table([['run', p.run_id], ['task', p.task], ['unit', p.unit], ['class', p.error_class], ['status', p.status], ['error', p.error]]));
}

// entryDetails is a whole dead letter: redacted request, error, response snippet,
// attempts, replay history, and its buttons.
function entryDetails(e) {
  const div = el('div', { class: 'entry-details' });
  div.append(el('h3', {}, `dead letter ${e.id} · ${e.status}`));
  div.append(table([
    ['flow', e.flow], ['run', el('a', { href: `/runs/${e.run_id}` }, `run ${e.run_id}`)], ['task', e.task], ['unit', e.unit],
    ['class', e.error_class], ['HTTP status', e.http_status || ''], ['attempts', fmt(e.attempts)],
    ['request', e.request && e.request.url ? `${e.request.method || 'GET'} ${e.request.url}` : ''],
    ['first failed', e.first_failed_at], ['last failed', e.last_failed_at],
    ['bbox', e.bbox ? e.bbox.join(', ') : ''],
  ]));
  div.append(el('h4', {}, 'Error'), el('pre', { class: 'err' }, e.error || ''));
  if (e.request && e.request.body) div.append(el('h4', {}, 'Request body'), el('pre', {}, e.request.body));
  if (e.response_snippet) div.append(el('h4', {}, 'Response'), el('pre', {}, e.response_snippet));
  if (e.replay_history && e.replay_history.length) {
    const ul = el('ul', { class: 'history' });
    for (const h of e.replay_history) ul.append(el('li', {}, `${h.at}: ${h.result}${h.error ? ' — ' + h.error : ''}`));
    div.append(el('h4', {}, 'Replays'), ul);
  }
  if (e.status === 'open') {
    const msg = el('span', { role: 'status' });
    const act = (what) => async () => {
      try {
        const r = await api('POST', `/api/dlq/${what}`, { ids: [e.id] });
        msg.textContent = what === 'replay' ? `replaying ${r.replaying}…` : `discarded ${r.discarded}`;
        setTimeout(() => location.reload(), what === 'replay' ? 2500 : 600);
      } catch (err) { msg.textContent = err.message; }
    };
    // Only what this server does: the layout says so (a read-only server, or one without
    // flows, would answer 503).
    const can = document.body.dataset;
    const menu = el('p', { class: 'actions' });
    if (can.canRun === 'true') menu.append(el('button', { class: 'replay-one', onclick: act('replay') }, 'Replay'), ' ');
    if (can.canDiscard === 'true') menu.append(el('button', { class: 'discard-one', onclick: act('discard') }, 'Discard'), ' ');
    if (menu.childElementCount) {
      menu.append(msg);
      div.append(menu);
    }
  }
  return div;
}

async function showEntry(id) {
  const aside = document.getElementById('entry');
  if (!aside) return;
  aside.hidden = false;
  aside.replaceChildren(el('p', {}, 'loading…'));
  try {
    aside.replaceChildren(entryDetails(await api('GET', `/api/dlq/${id}`)));
  } catch (err) {
    aside.replaceChildren(el('p', { class: 'error' }, err.message));
  }
}

// The rerun dialog: the box drawn, the flow and its tasks; submitting it starts the run
// (POST /api/runs, the same code as geoflow run --bbox) and opens the run's page.
function rerunDialog() {
  const dlg = document.getElementById('rerun');
  if (!dlg) return null;
  const flows = JSON.parse(dlg.dataset.flows || '{}');
  const flowSel = document.getElementById('rerun-flow');
  const taskSel = document.getElementById('rerun-task');
  const fill = () => {
    taskSel.replaceChildren(el('option', { value: '' }, 'all tasks'));
    for (const t of flows[flowSel.value] || []) taskSel.append(el('option', { value: t }, t));
  };
  flowSel.addEventListener('change', fill);
  // Cancel is no submit button: Enter in a field submits with the form's first one,
  // which must be Go.
  document.getElementById('rerun-cancel').addEventListener('click', () => dlg.close());
  document.getElementById('rerun-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const err = document.getElementById('rerun-error');
    err.textContent = '';
    try {
      await rerun({ flow: flowSel.value, bbox: document.getElementById('rerun-bbox').value, tasks: taskSel.value ? [taskSel.value] : [] });
    } catch (e) { err.textContent = e.message; }
  });
  return {
    open(bbox, flow) {
      if (flow && flows[flow]) flowSel.value = flow;
      fill();
      document.getElementById('rerun-bbox').value = bbox.map((x) => Number(x.toFixed(6))).join(',');
      document.getElementById('rerun-error').textContent = '';
      dlg.showModal();
    },
  };
}

// rerun starts a run of flow over bbox ([w, s, e, n] or "w,s,e,n") and goes to its page.
export async function rerun({ flow, bbox, tasks }) {
  const r = await api('POST', '/api/runs', { flow, bbox, tasks: tasks && tasks.length ? tasks : undefined });
  location.href = r.url;
  return r;
}

function livePolling(gm) {
  const c = gm.container;
  if (!c.dataset.runUrl) return;
  // The server renders these parts again (escaped, as the page was); they replace the
  // page's own.
  const swap = async (id, fragment) => {
    const part = document.getElementById(id);
    if (!part || !c.dataset.tasksUrl) return;
    const resp = await fetch(c.dataset.tasksUrl.replace('fragment=tasks', `fragment=${fragment}`), { credentials: 'same-origin' });
    if (resp.ok) part.innerHTML = await resp.text();
  };
  const tick = async () => {
    try {
      const run = await api('GET', c.dataset.runUrl);
      await gm.refresh();
      await swap('tasks', 'tasks');
      await swap('run-head', 'head');
      c.dataset.status = run.status;
      if (run.status === 'running') setTimeout(tick, 1500);
    } catch (err) {
      setTimeout(tick, 5000);
    }
  };
  if (c.dataset.status === 'running') setTimeout(tick, 1500);
}

function dlqActions(gm) {
  const picks = () => [...document.querySelectorAll('input.pick:checked')].map((i) => Number(i.value));
  const msg = document.getElementById('dlq-message');
  const buttons = ['replay-selected', 'discard-selected'].map((id) => document.getElementById(id)).filter(Boolean);
  const update = () => { for (const b of buttons) b.disabled = picks().length === 0; };
  document.querySelectorAll('input.pick').forEach((i) => i.addEventListener('change', update));
  const all = document.getElementById('select-all');
  if (all) all.addEventListener('change', () => { document.querySelectorAll('input.pick').forEach((i) => { i.checked = all.checked; }); update(); });
  const send = async (what, body) => {
    try {
      const r = await api('POST', `/api/dlq/${what}`, body);
      msg.textContent = what === 'replay' ? `replaying ${r.replaying ?? r.would_replay}…` : `discarded ${r.discarded}${r.error ? ' (' + r.error + ')' : ''}`;
      setTimeout(() => location.reload(), what === 'replay' ? 2500 : 600);
    } catch (err) { msg.textContent = err.message; }
  };
  const inView = (btn) => {
    const q = new URLSearchParams(btn.dataset.query || '');
    const filter = {};
    for (const k of ['flow', 'task', 'class', 'since', 'host']) if (q.get(k)) filter[k] = q.get(k);
    if (q.get('run')) filter.run = Number(q.get('run'));
    filter.bbox = gm.viewBBox();
    return { all: true, filter };
  };
  const on = (id, fn) => { const b = document.getElementById(id); if (b) b.addEventListener('click', () => fn(b)); };
  on('replay-selected', () => send('replay', { ids: picks() }));
  on('discard-selected', () => send('discard', { ids: picks() }));
  on('replay-view', (b) => send('replay', inView(b)));
  on('discard-view', (b) => send('discard', inView(b)));
  document.querySelectorAll('a.show-entry').forEach((a) => a.addEventListener('click', (ev) => {
    ev.preventDefault();
    showEntry(a.dataset.id);
    const f = (gm.fc || emptyFC()).features.find((x) => String(x.properties.id) === a.dataset.id);
    const b = f && extentOf([f]);
    if (b) gm.map.fitBounds([[b[0], b[1]], [b[2], b[3]]], { padding: 80, maxZoom: 15, duration: 0 });
  }));
}

function init() {
  const maps = {};
  for (const c of document.querySelectorAll('.map')) maps[c.id] = c.dataset.table ? new TableMap(c) : new GeoMap(c);
  const dialog = rerunDialog();
  // areaDrawn is what the draw tool calls with the box drawn; tests call it too.
  const areaDrawn = (bbox, flow) => dialog && dialog.open(bbox, flow);
  document.querySelectorAll('button.draw').forEach((b) => b.addEventListener('click', () => {
    const gm = maps[b.dataset.for];
    if (!gm) return;
    b.classList.add('active');
    gm.startDraw((bbox) => { b.classList.remove('active'); areaDrawn(bbox, gm.container.dataset.flow); });
  }));
  document.querySelectorAll('button.run-now').forEach((b) => b.addEventListener('click', async () => {
    b.disabled = true;
    try { await rerun({ flow: b.dataset.flow }); } catch (err) { b.disabled = false; b.title = err.message; b.textContent = 'Run now (failed: hover)'; }
  }));
  for (const gm of Object.values(maps)) {
    if (gm instanceof TableMap) continue;
    livePolling(gm);
    if (gm.kind === 'dlq') dlqActions(gm);
  }
  const q = new URLSearchParams(location.search);
  if (document.body.dataset.page === 'dlq' && q.get('id')) showEntry(q.get('id'));
  window.geoflow = { maps, areaDrawn, rerun, api };
}

init();
