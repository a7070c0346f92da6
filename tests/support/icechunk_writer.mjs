// A line-driven driver over real icechunk 2.x (the npm WASM build), for
// tests that need spec-2 repositories written, read and checked by
// icechunk itself.  The same protocol as icechunk_writer.py: one JSON array
// per stdin line, one JSON answer per stdout line.
//   ["create", path]                      -> {ok}
//   ["commit", path, branch, name]        -> {ok, snapshot_id}
//   ["tags"|"branches", path]             -> {ok, names}
//   ["lookup_tag"|"lookup_branch", path, name] -> {ok, snapshot_id}
//   ["ancestry", path, ref]               -> {ok, entries: [[id, iso, message]]}
//   ["diff", path, from_sid, to_sid]      -> {ok, diff}
//   ["set_flag", path, name, bool]         -> {ok} (setFeatureFlag)
//   ["check", path]                       -> {ok} after opening and reading every ref
// The WASM build has no local-filesystem storage, so this file supplies one
// (create-if-absent through link(), replace through rename(), temporaries
// named like object_store's so listings skip them).
import fs from 'node:fs'
import path from 'node:path'
import readline from 'node:readline'
import { createRequire } from 'node:module'

const require = createRequire(path.resolve(process.env.ICECHUNK_JS_DIR || '.cache/icechunk-js') + '/')
const ic = require('@earthmover/icechunk')

function missing(key) {
  return new Error(`ObjectNotFound: ${key}`)
}

function versionOf(file) {
  const st = fs.statSync(file, { bigint: true })
  return `${st.ino.toString(16)}:${st.mtimeNs.toString(16)}:${st.size.toString(16)}`
}

function filesUnder(dir, out = []) {
  let entries
  try { entries = fs.readdirSync(dir, { withFileTypes: true }) } catch { return out }
  for (const e of entries) {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) filesUnder(full, out)
    else if (!/#\d+$/.test(e.name)) out.push(full)
  }
  return out
}

let serial = 0
function place(file, data, createOnly) {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const tmp = `${file}#${process.pid}${serial++}`
  fs.writeFileSync(tmp, data)
  try {
    if (createOnly) fs.linkSync(tmp, file)
    else fs.renameSync(tmp, file)
  } finally {
    if (fs.existsSync(tmp)) fs.unlinkSync(tmp)
  }
}

function storage(root) {
  fs.mkdirSync(root, { recursive: true })
  const at = (key) => path.join(root, key)
  return ic.Storage.newCustom({
    canWrite: async () => true,
    getObjectRange: async (_e, { path: key, rangeStart, rangeEnd }) => {
      const f = at(key)
      if (!fs.existsSync(f)) throw missing(key)
      let data = fs.readFileSync(f)
      if (rangeStart != null) data = data.subarray(rangeStart, rangeEnd ?? data.length)
      return { data, version: { etag: versionOf(f) } }
    },
    getObjectConditional: async (_e, { path: key, previousVersion }) => {
      const f = at(key)
      if (!fs.existsSync(f)) throw missing(key)
      const v = versionOf(f)
      if (previousVersion && previousVersion.etag === v) return { kind: 'on_latest_version' }
      return { kind: 'modified', data: fs.readFileSync(f), newVersion: { etag: v } }
    },
    putObject: async (_e, { path: key, data, previousVersion }) => {
      const f = at(key)
      const createOnly = previousVersion && !previousVersion.etag && !previousVersion.generation
      if (createOnly) {
        try { place(f, data, true) } catch (e) {
          if (e.code === 'EEXIST') return { kind: 'not_on_latest_version' }
          throw e
        }
      } else {
        if (previousVersion && previousVersion.etag &&
            (!fs.existsSync(f) || versionOf(f) !== previousVersion.etag)) {
          return { kind: 'not_on_latest_version' }
        }
        place(f, data, false)
      }
      return { kind: 'updated', newVersion: { etag: versionOf(f) } }
    },
    copyObject: async (_e, { from, to, version }) => {
      const src = at(from)
      if (!fs.existsSync(src)) throw missing(from)
      if (version && version.etag && versionOf(src) !== version.etag) {
        return { kind: 'not_on_latest_version' }
      }
      place(at(to), fs.readFileSync(src), false)
      return { kind: 'updated', newVersion: version }
    },
    listObjects: async (_e, prefix) => {
      const clean = prefix.replace(/^\/+/, '')
      const base = at(clean)
      const dir = fs.existsSync(base) && fs.statSync(base).isDirectory() ? base : path.dirname(base)
      return filesUnder(dir)
        .filter((f) => path.relative(root, f).startsWith(clean))
        .map((f) => {
          const st = fs.statSync(f)
          return { id: path.relative(base, f).split(path.sep).join('/'), createdAt: st.mtime, sizeBytes: st.size }
        })
    },
    deleteBatch: async (_e, { prefix, batch }) => {
      let objects = 0, bytes = 0
      for (const { id, size } of batch) {
        const f = at(`${prefix}/${id}`)
        if (fs.existsSync(f)) { fs.unlinkSync(f); objects++; bytes += size }
      }
      return { deletedObjects: objects, deletedBytes: bytes }
    },
    getObjectLastModified: async (_e, key) => {
      const f = at(key)
      if (!fs.existsSync(f)) throw missing(key)
      return fs.statSync(f).mtime
    },
  })
}

const open = (p) => ic.Repository.open(storage(p))

async function refOf(repo, ref) {
  try { return { branch: ref, id: await repo.lookupBranch(ref) } } catch {}
  try { return { tag: ref, id: await repo.lookupTag(ref) } } catch {}
  return { snapshotId: ref, id: ref }
}

const iso = (d) => new Date(d).toISOString().replace(/\.\d+Z$/, '+00:00')

async function run([op, p, ...rest]) {
  if (op === 'create') { await ic.Repository.create(storage(p)); return {} }
  const repo = await open(p)
  switch (op) {
    case 'commit': {
      const [branch, name] = rest
      const s = await repo.writableSession(branch)
      const group = { zarr_format: 3, node_type: 'group', attributes: {} }
      const arr = { zarr_format: 3, node_type: 'array', shape: [2], data_type: 'int32',
        chunk_grid: { name: 'regular', configuration: { chunk_shape: [2] } },
        chunk_key_encoding: { name: 'default', configuration: { separator: '/' } },
        fill_value: 0, codecs: [{ name: 'bytes', configuration: { endian: 'little' } }],
        attributes: {} }
      if (!(await s.store.exists('zarr.json'))) await s.store.set('zarr.json', Buffer.from(JSON.stringify(group)))
      await s.store.set(`${name}/zarr.json`, Buffer.from(JSON.stringify(arr)))
      await s.store.set(`${name}/c/0`, Buffer.from([1, 0, 0, 0, 2, 0, 0, 0]))
      return { snapshot_id: await s.commit(`write ${name}`) }
    }
    case 'tags': return { names: (await repo.listTags()).sort() }
    case 'branches': return { names: (await repo.listBranches()).sort() }
    case 'lookup_tag': return { snapshot_id: await repo.lookupTag(rest[0]) }
    case 'lookup_branch': return { snapshot_id: await repo.lookupBranch(rest[0]) }
    case 'ancestry': {
      const r = await refOf(repo, rest[0])
      const q = r.branch ? { branch: r.branch } : r.tag ? { tag: r.tag } : { snapshotId: r.id }
      const list = await repo.ancestry(q)
      return { entries: list.map((i) => [i.id, iso(i.writtenAt), i.message]) }
    }
    case 'diff': {
      const d = await repo.diff({ fromSnapshotId: rest[0], toSnapshotId: rest[1] })
      return { diff: d }
    }
    case 'set_flag': {
      await repo.setFeatureFlag(rest[0], rest[1])
      return {}
    }
    case 'check': {
      for (const b of await repo.listBranches()) await repo.lookupBranch(b)
      for (const t of await repo.listTags()) await repo.lookupTag(t)
      return {}
    }
  }
  throw new Error(`unknown op ${op}`)
}

const rl = readline.createInterface({ input: process.stdin })
for await (const line of rl) {
  let out
  try { out = { ok: true, ...(await run(JSON.parse(line))) } } catch (e) {
    out = { ok: false, error: String(e && e.message ? e.message : e) }
  }
  process.stdout.write(JSON.stringify(out, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)) + '\n')
}
// the WASI runtime keeps the event loop alive for seconds after input ends
process.exit(0)
