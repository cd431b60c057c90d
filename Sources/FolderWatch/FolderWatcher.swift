import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Folder trees watched with inotify: which folders changed, reported once nothing under them has changed for a
/// quiet period (a book being copied in is reported when its last file is written, not at each file).
///
/// Each folder of each tree has a watch (symbolic links are not followed: no loops, no other trees), up to
/// `watchLimit` (the kernel's `max_user_watches` is shared by every program of the user); the folders beyond it are
/// reported once as ``Change/unwatched(_:)`` for the owner to scan from time to time. A tree that goes away is
/// reported as ``Change/gone(_:)``: a root deleted or moved (or not there when watching starts), or a file system
/// unmounted from a root or from a folder inside one (that folder is what is gone, not the whole root). Each is
/// looked for again every `rootCheck`: ``Change/back(_:)`` when it is there again (a folder again; a file system
/// mounted on it again, for an unmounted one: the empty folder left is not the library), watched anew. When the
/// kernel's queue overflows, ``Change/overflowed`` says events were lost: everything may have changed.
///
/// Events are read on a dispatch queue of the watcher's own; ``changes`` is the only way out.
// @unchecked: the dispatch sources are set once in init, and dispatch sources are safe to cancel and reschedule from
// any thread; everything that changes is in `state`.
public final class FolderWatcher: @unchecked Sendable {
    public enum Change: Sendable, Equatable {
        /// These folders (none inside another) changed, and have been quiet since: files in them added, removed,
        /// renamed or written; or the folder itself added (a book copied or moved in) or removed (it no longer
        /// exists then).
        case settled([String])
        /// Folders left unwatched because the watch limit was reached, in the order they were found.
        case unwatched([String])
        /// A root, or a folder inside one a file system was unmounted from, is no longer there.
        case gone(String)
        /// A folder reported gone is there again, and watched.
        case back(String)
        case overflowed
    }

    public let changes: AsyncStream<Change>
    private let continuation: AsyncStream<Change>.Continuation
    private let queue = DispatchQueue(label: "lectern.folder-watch")
    private let state: Mutex<State>
    private let fd: Int32
    private let source: any DispatchSourceRead
    private let rootTimer: any DispatchSourceTimer
    /// Fires `quiet` after the last event; each event sets it again.
    private let quietTimer: any DispatchSourceTimer
    private let quiet: Duration

    private struct State {
        var folders: [Int32: String] = [:]
        var watches: [String: Int32] = [:]
        var roots: [String]
        /// Roots, and folders inside them a file system was unmounted from, not there: each with whether it is back
        /// once a file system is mounted on it again (the empty folder left is not the library) or once it is a
        /// folder again.
        var gone: [String: Bool] = [:]
        /// What was mounted where when last looked (at the start and every `rootCheck`): which folder an unmount
        /// took away.
        var mounts = Mounts.current()
        var pending: Set<String> = []
        var watchLimit: Int
    }

    private static let folderEvents = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY
                                             | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)

    /// Starts watching `roots` (absolute paths; those that don't exist yet are looked for every `rootCheck`).
    /// Returns nil when no inotify instance can be made (the user's `max_user_instances` is used up).
    ///
    /// Blocks until every folder of the trees has its watch: a walk of the whole trees, on the watcher's queue, which
    /// a big library or a slow disk makes long. Make a watcher on a thread for blocking work (the daemon's
    /// `ThreadPool.fileSystem`), not in a task or an actor, which would hold one of the cooperative pool's threads.
    public init?(roots: [String], quiet: Duration = .seconds(2), watchLimit: Int = 8192, rootCheck: Duration = .seconds(30)) {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        (changes, continuation) = AsyncStream.makeStream(of: Change.self)
        self.quiet = quiet
        state = Mutex(State(roots: roots.map { Self.standardized($0) }, watchLimit: watchLimit))
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        rootTimer = DispatchSource.makeTimerSource(queue: queue)
        quietTimer = DispatchSource.makeTimerSource(queue: queue)
        let descriptor = fd
        source.setEventHandler { [weak self] in self?.readEvents() }
        // Dispatch needs the descriptor open until the source is cancelled.
        source.setCancelHandler { close(descriptor) }
        rootTimer.setEventHandler { [weak self] in self?.lookForGoneFolders() }
        quietTimer.setEventHandler { [weak self] in self?.settle() }
        queue.sync {
            state.withLock { state in
                var unwatched: [String] = []
                for root in state.roots {
                    if !Self.isFolder(root) {
                        state.gone[root] = false
                        continuation.yield(.gone(root))
                        continue
                    }
                    unwatched += watchTree(root, in: &state)
                }
                report(unwatched: unwatched)
            }
        }
        source.resume()
        rootTimer.schedule(deadline: .now() + rootCheck.timeInterval, repeating: rootCheck.timeInterval)
        rootTimer.resume()
        quietTimer.schedule(deadline: .distantFuture)
        quietTimer.resume()
    }

    deinit { stop() }

    /// Stops watching; ``changes`` ends. Idempotent; from any thread.
    public func stop() {
        source.cancel()
        rootTimer.cancel()
        quietTimer.cancel()
        continuation.finish()
    }

    /// How many folders are watched now.
    public var watchCount: Int { state.withLock { $0.watches.count } }

    // MARK: - On the watcher's queue

    private func readEvents() {
        let size = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer, size)
            guard count > 0 else { return }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = buffer.advanced(by: offset + MemoryLayout<inotify_event>.size)
                let name = event.len > 0 ? String(cString: nameStart.assumingMemoryBound(to: CChar.self)) : ""
                handle(descriptor: event.wd, mask: event.mask, name: name)
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
    }

    private func handle(descriptor: Int32, mask: UInt32, name: String) {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            continuation.yield(.overflowed)
            return
        }
        state.withLock { state in
            guard let folder = state.folders[descriptor] else { return }
            if mask & UInt32(IN_IGNORED) != 0 {
                forget(descriptor, in: &state)
                return
            }
            if mask & UInt32(IN_UNMOUNT | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                guard let root = state.roots.first(where: { folder == $0 || folder.hasPrefix($0 + "/") }) else { return }
                if mask & UInt32(IN_UNMOUNT) != 0 {
                    let (gone, waitingForMount) = Self.unmounted(folder, within: root, mounts: state.mounts)
                    went(gone, waitingForMount: waitingForMount, in: &state)
                } else if folder == root {
                    went(root, waitingForMount: false, in: &state)
                }
                return
            }
            // A folder added or removed is itself the change (a book copied in, a book deleted), not its parent:
            // the owner then reads that folder alone, not all its siblings.
            let path = name.isEmpty ? folder : folder + "/" + name
            var changed = folder
            if mask & UInt32(IN_ISDIR) != 0 {
                if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    report(unwatched: watchTree(path, in: &state))
                    changed = path
                } else if mask & UInt32(IN_MOVED_FROM | IN_DELETE) != 0 {
                    unwatchTree(path, in: &state)
                    changed = path
                }
            }
            state.pending.insert(changed)
            quietTimer.schedule(deadline: .now() + quiet.timeInterval)
        }
    }

    /// Watches `root` and every folder below it (not through symbolic links); the folders left unwatched at the limit.
    private func watchTree(_ root: String, in state: inout State) -> [String] {
        var unwatched: [String] = []
        var stack = [root]
        while let folder = stack.popLast() {
            guard state.watches[folder] == nil else { continue }
            guard state.watches.count < state.watchLimit else {
                unwatched.append(folder)
                continue
            }
            let descriptor = inotify_add_watch(fd, folder, Self.folderEvents)
            guard descriptor >= 0 else {
                if errno == ENOSPC { unwatched.append(folder) }  // the kernel's limit: scanned instead
                continue
            }
            state.folders[descriptor] = folder
            state.watches[folder] = descriptor
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for entry in entries.sorted().reversed() {
                let path = folder + "/" + entry
                if Self.isFolder(path, followingLinks: false) { stack.append(path) }
            }
        }
        return unwatched
    }

    private func unwatchTree(_ root: String, in state: inout State) {
        for (folder, descriptor) in state.watches where folder == root || folder.hasPrefix(root + "/") {
            inotify_rm_watch(fd, descriptor)
            forget(descriptor, in: &state)
        }
    }

    private func forget(_ descriptor: Int32, in state: inout State) {
        guard let folder = state.folders.removeValue(forKey: descriptor) else { return }
        if state.watches[folder] == descriptor { state.watches[folder] = nil }
    }

    private func report(unwatched folders: [String]) {
        guard !folders.isEmpty else { return }
        continuation.yield(.unwatched(folders))
    }

    /// `folder` (a root, or a folder a file system was unmounted from) went away: its watches go, and it is looked
    /// for every `rootCheck`.
    private func went(_ folder: String, waitingForMount: Bool, in state: inout State) {
        guard !state.gone.keys.contains(where: { folder == $0 || folder.hasPrefix($0 + "/") }) else { return }
        unwatchTree(folder, in: &state)
        state.gone[folder] = waitingForMount
        state.pending = state.pending.filter { $0 != folder && !$0.hasPrefix(folder + "/") }
        continuation.yield(.gone(folder))
    }

    /// Every `rootCheck`: what went is looked for, and the mounts inside the roots are compared with the last look's.
    /// One gone (a bind mount, which inotify does not see unmounted) is gone; one new (a disk mounted in the library
    /// while watched) is watched anew and reported changed.
    private func lookForGoneFolders() {
        let mounts = Mounts.current()
        state.withLock { state in
            // Mounts that could not be read are not compared: they would all seem gone, or all new.
            if mounts.points.isEmpty || state.mounts.points.isEmpty { state.mounts = mounts }
            let roots = state.roots
            let inRoots = { (point: String) in roots.contains { point == $0 || point.hasPrefix($0 + "/") } }
            for point in state.mounts.points.subtracting(mounts.points).sorted() where inRoots(point) {
                went(point, waitingForMount: true, in: &state)
            }
            for point in mounts.points.subtracting(state.mounts.points).sorted()
            where inRoots(point) && !state.gone.keys.contains(where: { point == $0 || point.hasPrefix($0 + "/") }) {
                unwatchTree(point, in: &state)
                report(unwatched: watchTree(point, in: &state))
                state.pending.insert(point)
                quietTimer.schedule(deadline: .now() + quiet.timeInterval)
            }
            state.mounts = mounts
            for (folder, waitingForMount) in state.gone.sorted(by: { $0.key < $1.key })
            where waitingForMount ? mounts.isMounted(folder) : Self.isFolder(folder) {
                state.gone[folder] = nil
                // The empty folder a disk was unmounted from may be watched (made again, seen from its parent).
                unwatchTree(folder, in: &state)
                report(unwatched: watchTree(folder, in: &state))
                continuation.yield(.back(folder))
            }
        }
    }

    /// What an IN_UNMOUNT of `folder` (in `root`) took away, and whether it is back once mounted again or once a
    /// folder again: the mount at or below the root that holds `folder`, as last seen; the root, when the file
    /// system was mounted above it (back once it is a folder again); else (mounted since the last look) the nearest
    /// folder at or above `folder` that is still there, or the root.
    static func unmounted(_ folder: String, within root: String, mounts: Mounts) -> (folder: String, waitingForMount: Bool) {
        let point = mounts.mountPoint(of: folder)
        if point == root || point.hasPrefix(root + "/") { return (point, true) }
        // Mounted above the root ("/" is never unmounted: a mount made since the last look).
        if point != "/" || !isFolder(root) { return (root, false) }
        var candidate = folder
        while candidate != root && !isFolder(candidate) { candidate = (candidate as NSString).deletingLastPathComponent }
        return (candidate, true)
    }

    private func settle() {
        let folders = state.withLock { state -> [String] in
            defer { state.pending = [] }
            return Self.outermost(state.pending)
        }
        if !folders.isEmpty { continuation.yield(.settled(folders)) }
    }

    // MARK: - Paths

    /// The folders of `folders` that are inside none of the others, sorted.
    public static func outermost(_ folders: Set<String>) -> [String] {
        folders.sorted().reduce(into: [String]()) { kept, folder in
            if let last = kept.last, folder.hasPrefix(last + "/") { return }
            kept.append(folder)
        }
    }

    static func standardized(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    static func isFolder(_ path: String, followingLinks: Bool = true) -> Bool {
        var status = stat()
        let result = followingLinks ? stat(path, &status) : lstat(path, &status)
        return result == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }
}

private extension Duration {
    var timeInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}
