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

    /// Whether libpulse could find a server somewhere else than the user's socket: the system-wide one
    /// (`/run/pulse/native`, which libpulse always tries) or a `default-server` in the client.conf it reads
    /// (`$PULSE_CLIENTCONFIG`, else `$XDG_CONFIG_HOME/pulse/client.conf` or `~/.config/pulse/client.conf`, else
    /// `/etc/pulse/client.conf`, and `/etc/pulse/client.conf.d/*.conf`). Not seen: an X11 root window's
    /// `PULSE_SERVER` property (a server published for remote X clients).
    static func serverConfiguredElsewhere(environment: [String: String] = ProcessInfo.processInfo.environment,
                                          systemSocket: String = "/run/pulse/native",
                                          systemConfig: String = "/etc/pulse/client.conf") -> Bool {
        var status = stat()
        if stat(systemSocket, &status) == 0 { return true }
        var files: [String] = []
        if let explicit = environment["PULSE_CLIENTCONFIG"], !explicit.isEmpty {
            files.append(explicit)
        } else {
            let home = environment["HOME"] ?? ""
            let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
            let user = config + "/pulse/client.conf"
            files.append(FileManager.default.fileExists(atPath: user) ? user : systemConfig)
        }
        let dotD = systemConfig + ".d"
        if let names = try? FileManager.default.contentsOfDirectory(atPath: dotD) {
            files += names.filter { $0.hasSuffix(".conf") }.sorted().map { dotD + "/" + $0 }
        }
        return files.contains { file in
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return false }
            return text.split(whereSeparator: \.isNewline).contains { line in
                let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                return parts.count == 2 && parts[0] == "default-server" && !parts[1].isEmpty
            }
        }
    }

    /// Returns `.changed` when something happens in the folder of `socketPath` (or the folder appears), else
    /// `.timedOut` after `timeout(socketExists, watching)` (asked once the watch is in place, so a socket created just
    /// before is not missed), or `.cancelled` when the task is. Where inotify can't watch (no folder and no parent,
    /// or no inotify instance left), it only sleeps: `watching` is false then.
    static func waitForChange(near socketPath: String,
                              timeout: (_ socketExists: Bool, _ watching: Bool) -> Duration) async -> Outcome {
        let folder = (socketPath as NSString).deletingLastPathComponent
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        var watching = false
        if fd >= 0 {
            let inFolder = UInt32(IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
            watching = inotify_add_watch(fd, folder, inFolder) >= 0
                || inotify_add_watch(fd, (folder as NSString).deletingLastPathComponent, UInt32(IN_CREATE | IN_MOVED_TO)) >= 0
        }
        var status = stat()
        let delay = timeout(stat(socketPath, &status) == 0, watching)
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
