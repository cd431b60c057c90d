import Synchronization

/// Calls held back until their object can answer them: made with ``BusConnection/hold(_:interfaces:)`` for an
/// object that is exported, or whose properties are set, after the name clients reach it by is owned (e.g. while a
/// database opens). A held call waits in its sender's turn, like a call whose handler is still running: the sender's
/// later calls wait behind it, other senders' calls don't. On ``release()`` it is handled as if it had just arrived.
///
/// Holding a whole object (`interfaces` nil) holds every call to its path, Introspect included, and Introspect of
/// its ancestors until it is exported; holding some interfaces holds their methods and their Get, GetAll and Set,
/// while the object's other interfaces and its Introspect are answered at once.
///
/// ```swift
/// let playlists = connection.hold(path, interfaces: ["org.mpris.MediaPlayer2.Playlists"])
/// _ = try await connection.requestName("org.mpris.MediaPlayer2.example")  // clients may call at once
/// object.update("org.mpris.MediaPlayer2.Playlists", ["PlaylistCount": .uint32(count)])
/// playlists.release()                                                      // now they are answered
/// ```
///
/// Held calls are handled by ``BusConnection/serveCalls()``; one waiting there holds up the queue until the release.
/// Closing the connection releases every hold.
public final class CallHold: Sendable {
    let path: ObjectPath
    /// The interfaces held; nil for the whole object.
    let interfaces: Set<String>?
    private let connection: BusConnection
    /// The calls waiting; nil once released.
    private let waiting = Mutex<[CheckedContinuation<Void, Never>]?>([])

    init(path: ObjectPath, interfaces: Set<String>?, connection: BusConnection) {
        self.path = path
        self.interfaces = interfaces
        self.connection = connection
    }

    /// Lets the held calls be handled, and the calls that come later pass. Idempotent.
    public func release() {
        connection.removeHold(self)  // first: a released call handled again must not find it
        let waiters = waiting.withLock { waiting in
            defer { waiting = nil }
            return waiting ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the hold is released.
    func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let released = waiting.withLock { waiting in
                waiting?.append(waiter)
                return waiting == nil
            }
            if released { waiter.resume() }
        }
    }

    /// Whether this hold keeps a call of `member` to `path` waiting. `interface` is the interface the call addresses
    /// (a Properties call's first argument), nil when it names none and the object doesn't declare the member.
    func holds(path: ObjectPath, member: String, interface: () -> String?) -> Bool {
        guard let interfaces else {
            // The whole object, and Introspect of its ancestors (which would not list it before it is exported).
            return path == self.path || (member == "Introspect" && path.isAncestor(of: self.path))
        }
        guard path == self.path, let interface = interface() else { return false }
        return interfaces.contains(interface)
    }
}
