import Synchronization

/// The objects exported on a connection and the holds on calls to them, with the connection's closed flag: what
/// every incoming method call is looked up in.
///
/// The closed flag lives here because it decides under the same lock whether a new hold is kept or released at
/// once: a hold made while the connection closes is either among the ``holds`` the closing connection releases
/// (`markClosed`) or sees the flag.
final class ObjectTable: Sendable {
    private struct State: ~Copyable {
        var objects: [ObjectPath: ExportedObject] = [:]
        /// Calls that wait for an object or some of its interfaces (few, and only while starting).
        var holds: [CallHold] = []
        var closed = false
    }
    private let state = Mutex(State())

    /// Whether the connection has closed (by ``BusConnection/close()`` or by the bus).
    var isClosed: Bool { state.withLock { $0.closed } }

    /// The objects and holds as they are now, to route one call.
    var snapshot: (objects: [ObjectPath: ExportedObject], holds: [CallHold]) {
        state.withLock { ($0.objects, $0.holds) }
    }

    /// The objects exported now.
    var objects: [ObjectPath: ExportedObject] { state.withLock { $0.objects } }

    /// The object at `path` when no call is held at all: the condition of the Get fast path.
    func objectWithoutHolds(at path: ObjectPath) -> ExportedObject? {
        state.withLock { $0.holds.isEmpty ? $0.objects[path] : nil }
    }

    func add(_ object: ExportedObject) throws {
        try state.withLock { s in
            guard s.objects[object.path] == nil else { throw BusError.failed("an object is already exported at \(object.path)") }
            s.objects[object.path] = object
        }
    }

    func remove(_ path: ObjectPath) {
        state.withLock { _ = $0.objects.removeValue(forKey: path) }
    }

    /// Keeps `hold`; false when the connection is closed and the hold must be released at once.
    func add(_ hold: CallHold) -> Bool {
        state.withLock { s in
            if !s.closed { s.holds.append(hold) }
            return !s.closed
        }
    }

    func remove(_ hold: CallHold) {
        state.withLock { $0.holds.removeAll { $0 === hold } }
    }

    /// The holds that exist now, to release them all.
    var holds: [CallHold] { state.withLock { $0.holds } }

    /// Marks the connection closed. With `removingObjects`, the objects leave the table and are returned: the caller
    /// drops them outside the lock (an object holds its connection: the last release may run the connection's deinit,
    /// which closes it and takes this lock).
    func close(removingObjects: Bool) -> [ExportedObject] {
        state.withLock { s in
            s.closed = true
            guard removingObjects else { return [] }
            defer { s.objects = [:] }
            return Array(s.objects.values)
        }
    }
}
