import CairnClient
import Foundation
import RESP

/// Commands grouped by column family, sent as `CF.USE family` followed by the family's commands.
struct FamilyCommands {
    private(set) var order: [String] = []
    private var groups: [String: [[any RESPArgument]]] = [:]

    var isEmpty: Bool { order.isEmpty }

    mutating func add(_ family: String, _ command: [any RESPArgument]) {
        if groups[family] == nil { order.append(family) }
        groups[family, default: []].append(command)
    }

    /// `DEL` of `deletes` and `MSET` of `sets`, in chunks, in `family` (sets win over deletes).
    mutating func write(_ family: String, sets: [([UInt8], [UInt8])], deletes: Set<[UInt8]>) {
        let remaining = deletes.isEmpty ? [] : deletes.subtracting(Set(sets.map(\.0)))
        for chunk in Array(remaining).sorted(by: { $0.lexicographicallyPrecedes($1) }).chunked(1000) {
            add(family, ["DEL"] + chunk.map { $0 as any RESPArgument })
        }
        for chunk in sets.chunked(1000) {
            var command: [any RESPArgument] = ["MSET"]
            command.reserveCapacity(1 + chunk.count * 2)
            for (k, v) in chunk {
                command.append(k)
                command.append(v)
            }
            add(family, command)
        }
    }

    /// Runs the commands now on the transaction's connection, one pipeline per family, and
    /// returns each family's replies. The transaction's family views switch families.
    func run(in tx: Transaction) async throws -> [String: [RESPValue]] {
        var out: [String: [RESPValue]] = [:]
        for family in order {
            do {
                out[family] = try await tx.family(family).pipeline(groups[family]!)
            } catch {
                // A server error here is the family switch's: the family is missing.
                if error.code == .server {
                    throw CairnStoreError(.saveFailed, "CF.USE \(family): \(error)")
                }
                throw error
            }
        }
        return out
    }

    /// Queues the commands for the transaction's EXEC, each in its family.
    func queue(in tx: Transaction) {
        for family in order {
            let view = tx.family(family)
            for command in groups[family]! { view.queue(command) }
        }
    }
}

/// What a save found stored for one object, read under WATCH.
///
/// The entries the stored object owns are computed when it is read: a class instance decoded
/// here may later be changed in place (nullify), and the entries to delete are the stored ones.
enum StoredState {
    struct Present {
        var object: any StoredObject
        var header: BodyHeader
        var indexKeys: Set<[UInt8]>
        var textKeys: Set<[UInt8]>
        var referenceKeys: Set<[UInt8]>
    }

    case absent
    case present(Present)

    var present: Present? {
        if case .present(let p) = self { return p }
        return nil
    }

    var object: (any StoredObject)? { present?.object }
    var revision: UInt64? { present?.header.revision }
}

extension StoreSession {
    /// Commits every change of the session in one MULTI/EXEC: objects, their index, text and
    /// relationship entries, cascaded deletes, removal of references to deleted objects, type
    /// counts, named roots and defaults. Either all of it lands or none of it.
    ///
    /// How: on one connection, WATCH the key of every object to be written or deleted and read
    /// what is stored (MGET), follow cascades and the reverse index of relationships (WATCHing
    /// what they add), check revisions, then queue the writes and EXEC. Index entries to remove
    /// are computed from the stored objects read under WATCH, so a concurrent writer makes the
    /// EXEC fail instead of leaving a stale entry.
    ///
    /// - Throws: ``CairnStoreError/Code/conflict`` when an object changed since this session
    ///   read it, an inserted id already exists, or a watched key changed before EXEC; nothing
    ///   is written and the changes stay in the session. ``CairnStoreError/Code/saveFailed``
    ///   when the server refused the transaction. Transport errors as `CairnClientError`
    ///   (whether a transaction whose reply was lost committed is then unknown).
    public func save() async throws {
        collectChangedInstances()
        guard hasChanges else { return }
        var models: [String: Model] = [:]
        for key in changeOrder {
            let type = changes[key]!.type
            models[key.type] = try await store.model(type)
        }
        let plan = SavePlan(session: self, models: models)
        var result: SaveResult?
        do {
            try await store.client.transaction(in: "default") { tx in
                result = try await plan.run(in: tx)
            }
        } catch let error as CairnClientError where error.code == .transactionAborted {
            throw CairnStoreError(.conflict, "an object changed between this save's read and its commit")
        } catch let error as CairnClientError where error.code == .server && error.prefix == "EXECABORT" {
            throw CairnStoreError(.saveFailed, "EXEC: \(error)")
        }
        if let result { apply(result) }
    }

    /// Class instances read through the session whose encoding changed become updates.
    private func collectChangedInstances() {
        for (key, seen) in seen where changes[key] == nil {
            guard let instance = seen.instance as? any StoredObject, let encoded = seen.encoded else { continue }
            guard let model = store.registeredModel(Swift.type(of: instance)), let now = try? model.encodeBody(instance), now != encoded else { continue }
            changes[key] = Change(type: Swift.type(of: instance), kind: .update, object: instance)
            changeOrder.append(key)
        }
    }

    /// After a successful save: what the session now knows is stored.
    private func apply(_ result: SaveResult) {
        for (key, written) in result.written {
            var entry = seen[key] ?? Seen()
            entry.revision = written.revision
            if written.isClass {
                entry.encoded = written.encoded
                entry.instance = written.object as AnyObject
            }
            seen[key] = entry
        }
        for key in result.deleted {
            seen[key] = Seen(revision: nil, encoded: nil, instance: nil)
        }
        discardChanges()
    }
}

struct SaveResult: Sendable {
    struct Written: @unchecked Sendable {  // the object goes back to the session's own task
        var revision: UInt64
        var encoded: [UInt8]
        var isClass: Bool
        var object: any StoredObject
    }
    var written: [StoreSession.ObjectKey: Written] = [:]
    var deleted: [StoreSession.ObjectKey] = []
}

/// One save, run on one pinned connection. `@unchecked Sendable`: it is created by the session
/// and used only within its `save()` call, on that task.
final class SavePlan: @unchecked Sendable {
    typealias ObjectKey = StoreSession.ObjectKey
    let session: StoreSession
    let store: CairnStore
    var models: [String: Model]
    var stored: [ObjectKey: StoredState] = [:]
    var upserts: [ObjectKey: StoreSession.Change] = [:]
    var upsertOrder: [ObjectKey] = []
    var deletes: [ObjectKey] = []
    var deleteSet: Set<ObjectKey> = []

    init(session: StoreSession, models: [String: Model]) {
        self.session = session
        self.store = session.store
        self.models = models
        for key in session.changeOrder {
            let change = session.changes[key]!
            if change.kind == .delete {
                deletes.append(key)
                deleteSet.insert(key)
            } else {
                upserts[key] = change
                upsertOrder.append(key)
            }
        }
    }

    func model(_ key: ObjectKey) throws -> Model {
        if let m = models[key.type] ?? store.model(named: key.type) {
            models[key.type] = m
            return m
        }
        throw CairnStoreError(
            .typeMismatch, "type '\(key.type)' is not registered with this store; list it in CairnStore.open(models:)")
    }

    /// Reads and watches what the save needs, checks revisions and queues the writes in `tx`,
    /// whose EXEC commits them when this returns (a failure leaves the watched keys unwatched).
    func run(in tx: Transaction) async throws -> SaveResult {
        try await readStored(upsertOrder + deletes, tx)
        try await expandCascades(tx)
        try await nullifyReferences(tx)
        try checkRevisions()
        var result = SaveResult()
        let commands = try buildCommands(&result)
        queue(commands, tx)
        return result
    }

    /// WATCHes and reads (MGET) the stored form of every key not read yet, in one round trip.
    private func readStored(_ keys: [ObjectKey], _ tx: Transaction) async throws {
        let fresh = keys.filter { stored[$0] == nil }
        guard !fresh.isEmpty else { return }
        var byFamily: [String: [ObjectKey]] = [:]
        var familyOrder: [String] = []
        for key in fresh {
            let family = try model(key).objectFamily
            if byFamily[family] == nil { familyOrder.append(family) }
            byFamily[family, default: []].append(key)
        }
        var commands = FamilyCommands()
        var reads: [(String, ArraySlice<ObjectKey>)] = []
        for family in familyOrder {
            for chunk in byFamily[family]!.chunked(1000) {
                commands.add(family, ["WATCH"] + chunk.map { $0.key as any RESPArgument })
            }
        }
        // Reads after every WATCH, so nothing read can change unnoticed before EXEC.
        var readCommands = FamilyCommands()
        for family in familyOrder {
            for chunk in byFamily[family]!.chunked(1000) {
                readCommands.add(family, ["MGET"] + chunk.map { $0.key as any RESPArgument })
                reads.append((family, chunk))
            }
        }
        _ = try await commands.run(in: tx)
        let readReplies = try await readCommands.run(in: tx)
        var position: [String: Int] = [:]
        for (family, chunk) in reads {
            let p = position[family, default: 0]
            position[family] = p + 1
            let reply = readReplies[family]![p]
            guard case .array(let values) = reply, values.count == chunk.count else {
                throw CairnStoreError(.saveFailed, "MGET in \(family) replied \(reply)")
            }
            for (key, value) in zip(chunk, values) {
                guard let body = value.bytes else {
                    stored[key] = .absent
                    continue
                }
                let m = try model(key)
                let (object, header, _) = try store.codec.decode(body, model: m, objectKey: key.key)
                stored[key] = .present(
                    StoredState.Present(
                        object: object, header: header, indexKeys: m.indexes.isEmpty ? [] : m.indexKeys(object),
                        textKeys: m.textKeys(of: object, id: key.key),
                        referenceKeys: m.relationships.isEmpty ? [] : m.referenceKeys(of: object, ownerKey: key.key)))
            }
        }
    }

    /// Adds the targets of cascading relationships of deleted objects to the deletes, until none is new.
    private func expandCascades(_ tx: Transaction) async throws {
        var frontier = deletes
        while !frontier.isEmpty {
            var next: [ObjectKey] = []
            for key in frontier {
                guard let object = stored[key]?.object else { continue }
                let m = try model(key)
                let targets = m.targetKeys(object)
                for (i, relationship) in m.relationships.enumerated() where relationship.rule == .cascade {
                    let targetModel = try await store.model(relationship.targetType)
                    models[targetModel.typeName] = targetModel
                    for target in targets[i] {
                        let targetKey = ObjectKey(type: targetModel.typeName, key: target)
                        guard !deleteSet.contains(targetKey) else { continue }
                        deleteSet.insert(targetKey)
                        deletes.append(targetKey)
                        next.append(targetKey)
                        // A delete wins over an update of the same object in this save.
                        if upserts.removeValue(forKey: targetKey) != nil { upsertOrder.removeAll { $0 == targetKey } }
                    }
                }
            }
            try await readStored(next, tx)
            frontier = next
        }
    }

    /// Removes pointers to deleted objects from the objects that hold them (found through the
    /// reverse index), turning those owners into updates of this save.
    private func nullifyReferences(_ tx: Transaction) async throws {
        let present = deletes.filter { stored[$0]?.object != nil }
        guard !present.isEmpty else { return }
        var commands = FamilyCommands()
        for key in present {
            let prefix = key.type.keyBytes + key.key
            commands.add(store.refsFamily, KeyRange(prefix: prefix).arguments(keysOnly: true))
        }
        let scans = try await commands.run(in: tx)[store.refsFamily] ?? []
        var owners: [(owner: ObjectKey, relationship: Int, target: ObjectKey)] = []
        for (key, reply) in zip(present, scans) {
            guard case .array(let items) = reply else { throw CairnStoreError(.saveFailed, "RANGE in refs replied \(reply)") }
            for item in items {
                guard let bytes = item.bytes, let entry = ReferenceEntry(bytes) else { continue }
                let owner = ObjectKey(type: entry.ownerType, key: entry.ownerKey)
                if deleteSet.contains(owner) { continue }
                owners.append((owner, entry.relationship, key))
            }
        }
        guard !owners.isEmpty else { return }
        // Owners this save does not already write: read them (WATCHed) to rewrite them.
        var toRead: [ObjectKey] = []
        for (owner, _, _) in owners where upserts[owner] == nil {
            if let instance = session.seen[owner]?.instance as? any StoredObject {
                // The session's instance is what the user sees: update it (its revision is checked).
                upserts[owner] = StoreSession.Change(type: type(of: instance), kind: .update, object: instance)
                upsertOrder.append(owner)
            } else {
                toRead.append(owner)
            }
        }
        // Every owner rewritten is read (and WATCHed): its stored entries are the ones to replace.
        try await readStored(owners.map(\.owner), tx)
        for owner in toRead where upserts[owner] == nil {
            guard let object = stored[owner]?.object else { continue }
            // Rewritten from what is stored: no revision expectation beyond the WATCH.
            upserts[owner] = StoreSession.Change(type: type(of: object), kind: .update, object: object)
            upsertOrder.append(owner)
            nullifiedFromStore.insert(owner)
        }
        for (owner, relationship, target) in owners {
            guard var change = upserts[owner], let object = change.object else { continue }
            change.object = try model(owner).removeTarget(object, relationship, target.key)
            upserts[owner] = change
        }
    }

    /// Owners rewritten from their stored form to drop a deleted target (no revision check).
    var nullifiedFromStore: Set<ObjectKey> = []

    private func checkRevisions() throws {
        for key in upsertOrder {
            let change = upserts[key]!
            let current = stored[key] ?? .absent
            switch change.kind {
            case .insert:
                if current.object != nil {
                    throw CairnStoreError(.conflict, "\(key.type) \(describe(key.key)) already exists")
                }
            default:
                guard !nullifiedFromStore.contains(key), let seen = session.seen[key], seen.instance != nil || seen.revision != nil
                else { continue }
                if seen.revision != current.revision {
                    throw CairnStoreError(.conflict, "\(key.type) \(describe(key.key)) changed since this session read it")
                }
            }
        }
        for key in deletes where session.changes[key]?.kind == .delete {
            guard let seen = session.seen[key], seen.revision != nil else { continue }
            if seen.revision != stored[key]?.revision {
                throw CairnStoreError(.conflict, "\(key.type) \(describe(key.key)) changed since this session read it")
            }
        }
    }

    private func buildCommands(_ result: inout SaveResult) throws -> FamilyCommands {
        // Writes per family, in the order families first appear; a family's slot is looked up
        // once per object, not once per key.
        var names: [String] = []
        var slots: [String: Int] = [:]
        var sets: [[([UInt8], [UInt8])]] = []
        var dels: [Set<[UInt8]>] = []
        func slot(_ family: String) -> Int {
            if let i = slots[family] { return i }
            slots[family] = names.count
            names.append(family)
            sets.append([])
            dels.append([])
            return names.count - 1
        }
        func set(_ family: Int, _ key: [UInt8], _ value: [UInt8]) {
            sets[family].append((key, value))
        }
        func del(_ family: Int, _ keys: Set<[UInt8]>) {
            dels[family].formUnion(keys)
        }
        var counts: [String: Int] = [:]
        let empty: [UInt8] = []

        for key in upsertOrder {
            let m = try model(key)
            let object = upserts[key]!.object!
            let old = stored[key] ?? .absent
            let encoded = try m.encodeBody(object)
            let revision = (old.revision ?? 0) + 1
            set(slot(m.objectFamily), key.key, try store.codec.encode(body: encoded, model: m, objectKey: key.key, revision: revision))
            let before = old.present
            /// Deletes the entries only `previous` has, adds those only `after` has.
            func replace(_ name: String, _ previous: Set<[UInt8]>?, _ after: Set<[UInt8]>) {
                let family = slot(name)
                guard let previous else {
                    for k in after { set(family, k, empty) }
                    return
                }
                del(family, previous.subtracting(after))
                for k in after where !previous.contains(k) { set(family, k, empty) }
            }
            if !m.indexes.isEmpty { replace(m.indexFamily, before?.indexKeys, m.indexKeys(object)) }
            if m.hasTextFields { replace(m.textFamily, before?.textKeys, m.textKeys(of: object, id: key.key)) }
            if !m.relationships.isEmpty {
                replace(store.refsFamily, before?.referenceKeys, m.referenceKeys(of: object, ownerKey: key.key))
            }
            if before == nil { counts[m.typeName, default: 0] += 1 }
            result.written[key] = SaveResult.Written(revision: revision, encoded: encoded, isClass: m.isClass, object: object)
        }
        for key in deletes {
            guard let old = stored[key]?.present else { continue }
            let m = try model(key)
            del(slot(m.objectFamily), [key.key])
            if !old.indexKeys.isEmpty { del(slot(m.indexFamily), old.indexKeys) }
            if !old.textKeys.isEmpty { del(slot(m.textFamily), old.textKeys) }
            if !old.referenceKeys.isEmpty { del(slot(store.refsFamily), old.referenceKeys) }
            counts[m.typeName, default: 0] -= 1
            result.deleted.append(key)
        }

        var commands = FamilyCommands()
        for (i, family) in names.enumerated() {
            commands.write(family, sets: sets[i], deletes: dels[i])
        }
        for (typeName, delta) in counts.sorted(by: { $0.key < $1.key }) where delta != 0 {
            commands.add(store.metaFamily, ["INCRBY", "count:\(typeName)", delta])
        }
        for (name, value) in session.rootChanges.sorted(by: { $0.key < $1.key }) {
            if let value { commands.add(store.metaFamily, ["SET", "root:\(name)", value]) }
            else { commands.add(store.metaFamily, ["DEL", "root:\(name)"]) }
        }
        for (name, value) in session.defaultChanges.sorted(by: { $0.key < $1.key }) {
            if let value { commands.add(store.metaFamily, ["SET", "default:\(name)", value]) }
            else { commands.add(store.metaFamily, ["DEL", "default:\(name)"]) }
        }
        return commands
    }

    /// Queues the writes (and the test hooks' extra command and pause before EXEC).
    private func queue(_ commands: FamilyCommands, _ tx: Transaction) {
        commands.queue(in: tx)
        let hooks = store.hooks.withLock { $0 }
        if let extra = hooks.extraQueuedCommand { tx.queue(extra) }
        tx.runBeforeExec(hooks.beforeExec)
    }

    private func describe(_ key: [UInt8]) -> String {
        key.count > 1 && key[0] == KeyTag.string ? "'\(decodeString(key) ?? "?")'" : key.map { String($0, radix: 16) }.joined()
    }
}

/// A range of keys in RANGE syntax: from `low` (inclusive) to `high` (exclusive; nil: the end).
struct KeyRange {
    var low: [UInt8]
    var high: [UInt8]?

    init(low: [UInt8], high: [UInt8]?) {
        self.low = low
        self.high = high
    }

    /// Every key that starts with `prefix`.
    init(prefix: [UInt8]) {
        self.init(low: prefix, high: KeyCodec.successor(ofPrefix: prefix))
    }

    /// `RANGE [low (high|+ [REV] [LIMIT n] [KEYSONLY]`.
    func arguments(reverse: Bool = false, limit: Int? = nil, keysOnly: Bool) -> [any RESPArgument] {
        var argv: [any RESPArgument] = ["RANGE", [UInt8(ascii: "[")] + low, high.map { [UInt8(ascii: "(")] + $0 } ?? [UInt8(ascii: "+")]]
        if reverse { argv.append("REV") }
        if let limit { argv += ["LIMIT", limit] }
        if keysOnly { argv.append("KEYSONLY") }
        return argv
    }
}
