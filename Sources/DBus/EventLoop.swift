import CDBus
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The thread that does a connection's I/O and dispatch, driven by libdbus's watch and timeout
/// functions and a self-pipe (a `read_write_dispatch` polling loop delays messages sent from other
/// threads by up to its timeout; see docs/decisions/dbus-event-loop.md).
///
/// libdbus calls the watch/timeout/wake-up callbacks from whichever thread holds its connection lock:
/// they only record the change under `state`'s lock and wake the thread. Only the loop thread calls
/// `dbus_connection_dispatch`, `dbus_watch_handle` and `dbus_timeout_handle`.
///
/// Every other use of the connection goes through ``perform(_:)``: one thread at a time, holding the gate, which
/// the loop thread holds except while it polls. libdbus 1.14 is not safe for two threads at once once the bus has
/// gone with calls pending (both queue the one Disconnected message: a crash), and a watch or timeout that another
/// thread's call frees must not be in the loop thread's hands (docs/decisions/dbus-event-loop.md).
final class EventLoop: Sendable {
    private struct State: ~Copyable {
        var watches: [Handle] = []
        var timeouts: [Handle: ContinuousClock.Instant] = [:]
        var stopping = false
    }

    /// A libdbus watch or timeout, kept as its address so the lock-protected state stays Sendable.
    /// Only the loop thread turns it back into a pointer, and only while libdbus still lists it.
    private struct Handle: Hashable, Sendable {
        let bits: UInt
        init(_ pointer: OpaquePointer) { bits = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer))) }
        var pointer: OpaquePointer { OpaquePointer(bitPattern: bits)! }
    }

    // Safe to share: a libdbus connection is thread-safe once dbus_threads_init_default has run.
    nonisolated(unsafe) let connection: OpaquePointer
    private let state = Mutex(State())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let threadID = Mutex<pthread_t?>(nil)
    /// Held by whichever thread uses the connection; see the type's comment.
    private let gate = NSLock()
    /// What other threads asked of the connection while the gate was held, in their order.
    private let queued = Mutex<[@Sendable (OpaquePointer) -> Void]>([])

    init(connection: OpaquePointer) throws {
        self.connection = connection
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BusError.failed("pipe failed: errno \(errno)") }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Installs the callbacks and starts the thread.
    func start(name: String) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(connection, addWatch, removeWatch, toggleWatch, me, nil)
        dbus_connection_set_timeout_functions(connection, addTimeout, removeTimeout, toggleTimeout, me, nil)
        dbus_connection_set_wakeup_main_function(connection, wakeUp, me, nil)
        dbus_connection_set_dispatch_status_function(connection, dispatchStatusChanged, me, nil)
        let thread = Thread { [self] in
            // Named from inside: on Linux, Foundation gives the OS a Thread's name only there (15 bytes at most).
            Thread.current.name = name
            threadID.withLock { $0 = pthread_self() }
            run()
        }
        thread.start()
    }

    /// Stops the thread after it has written what is queued and closes the connection; returns when it
    /// has finished (at once when called on the loop thread itself).
    func stop() {
        let alreadyStopping = state.withLock { s in
            defer { s.stopping = true }
            return s.stopping
        }
        guard !alreadyStopping else { return }
        wake()
        if isLoopThread { return }  // called from a handler: the loop ends when the handler returns
        finished.wait()
    }

    /// Runs `operation` with the connection, alone, after what other threads asked before: at once when the gate is
    /// free (the loop thread polls), otherwise on the loop thread before it polls again. Never waits for the gate: a
    /// thread that sends while holding a lock that the loop thread's handlers take (a property's getter, the store
    /// that orders PropertiesChanged) cannot deadlock with it.
    func perform(_ operation: @escaping @Sendable (OpaquePointer) -> Void) {
        if isLoopThread { return onLoopThread(operation) }
        if gate.try() {
            // The usual case, the loop thread in poll: at once, after what others queued before.
            runQueued()
            operation(connection)
            gate.unlock()
            return
        }
        queued.withLock { $0.append(operation) }
        if gate.try() {  // the holder let go meanwhile, perhaps after it ran the queue
            runQueued()
            gate.unlock()
        } else {
            wake()  // the holder may have run the queue before this was in it: the loop runs it
        }
    }

    /// On the loop thread, in a handler called during dispatch: runs `body` with the connection at once, after what
    /// other threads asked before.
    func onLoopThread(_ body: (OpaquePointer) -> Void) {
        precondition(isLoopThread, "onLoopThread called from another thread")
        runQueued()
        body(connection)
    }

    /// Runs what other threads queued, in order, until none is left; the caller holds the gate.
    private func runQueued() {
        while true {
            let operations = queued.withLock { queued in
                defer { queued = [] }
                return queued
            }
            if operations.isEmpty { return }
            for operation in operations { operation(connection) }
        }
    }

    /// Whether the caller runs on the loop thread (a handler called during dispatch).
    var isLoopThread: Bool {
        guard let id = threadID.withLock({ $0 }) else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    /// Makes the loop thread re-read its watches, timeouts and queue. From the loop thread itself there
    /// is nothing to do: it re-reads them before it polls again (this saves a write and a read per reply).
    func wake() {
        if isLoopThread { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)  // a full pipe already means "wake up"
    }

    // MARK: callbacks' bookkeeping (any thread)

    fileprivate func add(watch: OpaquePointer) {
        let handle = Handle(watch)
        state.withLock { $0.watches.append(handle) }
        wake()
    }
    fileprivate func remove(watch: OpaquePointer) {
        let handle = Handle(watch)
        state.withLock { $0.watches.removeAll { $0 == handle } }
        wake()
    }
    fileprivate func add(timeout: OpaquePointer) {
        let deadline = ContinuousClock.now + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
        let handle = Handle(timeout)
        state.withLock { $0.timeouts[handle] = deadline }
        wake()
    }
    fileprivate func remove(timeout: OpaquePointer) {
        let handle = Handle(timeout)
        state.withLock { $0.timeouts[handle] = nil }
        wake()
    }

    // MARK: the loop (loop thread only)

    private func run() {
        // Kept across iterations so that a round of the loop allocates nothing once they have grown.
        var watches: [Handle] = []
        var expired: [Handle] = []
        var pollfds: [pollfd] = []
        var drain = [UInt8](repeating: 0, count: 64)
        gate.lock()
        while true {
            runQueued()
            // A message sent from another thread while this one was in libdbus (handling a watch) is only queued:
            // libdbus could not take the connection's I/O path to write it, and wakes us instead. Nothing enables
            // the write watch then, so poll would wait for a reply to a call that was never sent (seen: a daemon
            // that never owned its name, its RequestName pending for 25 s). One non-blocking iteration writes it
            // (a full socket enables the write watch instead, and poll below waits for room: no spinning); what it
            // reads is dispatched next. Replies sent from this thread, while dispatching, are written at once.
            if dbus_connection_has_messages_to_send(connection) != 0 {
                _ = dbus_connection_read_write(connection, 0)
            }
            while dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS {
                _ = dbus_connection_dispatch(connection)
            }
            watches.removeAll(keepingCapacity: true)
            let (stopping, deadline) = state.withLock { s -> (Bool, ContinuousClock.Instant?) in
                for watch in s.watches where dbus_watch_get_enabled(watch.pointer) != 0 { watches.append(watch) }
                var earliest: ContinuousClock.Instant?
                for (timeout, deadline) in s.timeouts where dbus_timeout_get_enabled(timeout.pointer) != 0 {
                    earliest = min(earliest ?? deadline, deadline)
                }
                return (s.stopping, earliest)
            }
            if stopping { break }

            pollfds.removeAll(keepingCapacity: true)
            pollfds.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            for watch in watches {
                let flags = dbus_watch_get_flags(watch.pointer)
                var events: Int16 = 0
                if flags & 1 != 0 { events |= Int16(POLLIN) }   // DBUS_WATCH_READABLE
                if flags & 2 != 0 { events |= Int16(POLLOUT) }  // DBUS_WATCH_WRITABLE
                pollfds.append(pollfd(fd: dbus_watch_get_unix_fd(watch.pointer), events: events, revents: 0))
            }
            var timeoutMs: Int32 = -1
            if let deadline {
                let remaining = deadline - ContinuousClock.now
                let ms = remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
                timeoutMs = Int32(clamping: max(0, ms + 1))
            }
            gate.unlock()
            let ready = poll(&pollfds, nfds_t(pollfds.count), timeoutMs)
            let pollErrno = errno
            gate.lock()
            if ready < 0 && pollErrno != EINTR { break }

            if pollfds[0].revents != 0 {
                while read(wakeRead, &drain, drain.count) > 0 {}
            }
            for (index, watch) in watches.enumerated() {
                let revents = Int32(pollfds[index + 1].revents)
                guard revents != 0, state.withLock({ $0.watches.contains(watch) }) else { continue }
                var flags: UInt32 = 0
                if revents & Int32(POLLIN) != 0 { flags |= 1 }
                if revents & Int32(POLLOUT) != 0 { flags |= 2 }
                if revents & Int32(POLLERR) != 0 { flags |= 4 }  // DBUS_WATCH_ERROR
                if revents & Int32(POLLHUP) != 0 { flags |= 8 }  // DBUS_WATCH_HANGUP
                _ = dbus_watch_handle(watch.pointer, flags)
            }
            guard deadline != nil else { continue }  // no enabled timeout: none can have expired
            let now = ContinuousClock.now
            expired.removeAll(keepingCapacity: true)
            state.withLock { s in
                for (timeout, deadline) in s.timeouts where deadline <= now && dbus_timeout_get_enabled(timeout.pointer) != 0 {
                    expired.append(timeout)
                }
            }
            for timeout in expired {
                guard state.withLock({ $0.timeouts[timeout] != nil }) else { continue }
                _ = dbus_timeout_handle(timeout.pointer)
                state.withLock { s in
                    if s.timeouts[timeout] != nil {
                        s.timeouts[timeout] = now + .milliseconds(Int(dbus_timeout_get_interval(timeout.pointer)))
                    }
                }
            }
        }
        runQueued()
        dbus_connection_flush(connection)
        dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_wakeup_main_function(connection, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
        dbus_connection_close(connection)
        gate.unlock()
        finished.signal()
    }
}

private func loop(_ data: UnsafeMutableRawPointer?) -> EventLoop {
    Unmanaged<EventLoop>.fromOpaque(data!).takeUnretainedValue()
}

private func addWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    if let watch { loop(data).add(watch: watch) }
    return 1
}
private func removeWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    if let watch { loop(data).remove(watch: watch) }
}
private func toggleWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) { loop(data).wake() }
private func addTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    if let timeout { loop(data).add(timeout: timeout) }
    return 1
}
private func removeTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    if let timeout { loop(data).remove(timeout: timeout) }
}
private func toggleTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    // A re-enabled timeout starts its interval again.
    if let timeout { loop(data).add(timeout: timeout) }
}
private func wakeUp(_ data: UnsafeMutableRawPointer?) { loop(data).wake() }
private func dispatchStatusChanged(_ connection: OpaquePointer?, _ status: DBusDispatchStatus, _ data: UnsafeMutableRawPointer?) {
    if status == DBUS_DISPATCH_DATA_REMAINS { loop(data).wake() }
}
