import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Waits for the sound server's socket to appear, without polling: inotify on the socket's folder, or on the
/// folder's parent while the folder doesn't exist (PulseAudio and pipewire-pulse create `$XDG_RUNTIME_DIR/pulse/`
/// as they start). ``PulseClient`` waits on it between connection attempts, so that a machine without a sound
/// server costs no CPU (it used to try every 3 s) and a server that starts is seen at once.
enum SocketWatch {
    enum Outcome: Sendable, Equatable {
        /// Something was created, moved in or changed in the watched folder.
        case changed
        case timedOut
        case cancelled
    }

    /// The local socket libpulse tries first for `server` (nil: `PULSE_SERVER`, else `$PULSE_RUNTIME_PATH/native`,
    /// else `$XDG_RUNTIME_DIR/pulse/native`); nil for a remote server (`tcp:`, a host name) or none known.
    static func socketPath(server: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let server = server ?? environment["PULSE_SERVER"] {
            // A list of addresses, the first tried first; each may start with "{machine id}".
            guard var first = server.split(separator: " ").first.map(String.init) else { return nil }
            if first.hasPrefix("{"), let end = first.firstIndex(of: "}") { first = String(first[first.index(after: end)...]) }
            if first.hasPrefix("unix:") { first.removeFirst("unix:".count) }
            return first.hasPrefix("/") ? first : nil
        }
        if let runtime = environment["PULSE_RUNTIME_PATH"], runtime.hasPrefix("/") { return runtime + "/native" }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/pulse/native" }
        return nil
    }

    /// Returns `.changed` when something happens in the folder of `socketPath` (or the folder appears), else
    /// `.timedOut` after `timeout(socketExists)` (asked once the watch is in place, so a socket created just before
    /// is not missed), or `.cancelled` when the task is. Where inotify can't watch (no folder, no parent), it only
    /// sleeps.
    static func waitForChange(near socketPath: String, timeout: (_ socketExists: Bool) -> Duration) async -> Outcome {
        let folder = (socketPath as NSString).deletingLastPathComponent
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        var watching = false
        if fd >= 0 {
            let inFolder = UInt32(IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
            watching = inotify_add_watch(fd, folder, inFolder) >= 0
                || inotify_add_watch(fd, (folder as NSString).deletingLastPathComponent, UInt32(IN_CREATE | IN_MOVED_TO)) >= 0
        }
        var status = stat()
        let delay = timeout(stat(socketPath, &status) == 0)
        guard watching else {
            if fd >= 0 { close(fd) }
            do { try await Task.sleep(for: delay) } catch { return .cancelled }
            return .timedOut
        }

        let (events, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: .global())
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(fd, &buffer, buffer.count) > 0 {}
            continuation.yield()
        }
        // Dispatch needs the descriptor open until the source is cancelled.
        source.setCancelHandler { close(fd) }
        source.resume()
        defer {
            source.cancel()
            continuation.finish()
        }
        return await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                for await _ in events { return .changed }
                return .cancelled
            }
            group.addTask {
                do { try await Task.sleep(for: delay) } catch { return .cancelled }
                return .timedOut
            }
            let first = await group.next() ?? .cancelled
            group.cancelAll()
            return first
        }
    }
}
