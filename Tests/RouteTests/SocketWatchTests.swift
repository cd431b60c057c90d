import Foundation
import Synchronization
@testable import PulseAudio
import Testing
import TestSupport

/// Between connection attempts the output watcher waits on the sound server's socket folder (inotify), not on a
/// timer: these check what wakes it. Each wait's time limit is an hour, so `.changed` can only come from the event.
@Suite(.timeLimit(.minutes(1))) struct SocketWatchTests {
    static let hour = Duration.seconds(3600)

    /// An hour while the folder is watched; without a watch (no inotify instance left) the wait could only end with
    /// the hour, past the suite's time limit, which does not end it: a moment then, so that the test fails.
    static func limit(_ watching: Bool) -> Duration { watching ? hour : .milliseconds(1) }

    @Test func theSocketPathIsLibpulsesFirstLocalAddress() {
        #expect(SocketWatch.socketPath(server: "unix:/run/user/7/pulse/native", environment: [:]) == "/run/user/7/pulse/native")
        #expect(SocketWatch.socketPath(server: "/tmp/p/native", environment: [:]) == "/tmp/p/native")
        #expect(SocketWatch.socketPath(server: "{0123abcd}unix:/tmp/p/native tcp:host", environment: [:]) == "/tmp/p/native")
        #expect(SocketWatch.socketPath(server: "tcp:host:4713", environment: [:]) == nil)
        #expect(SocketWatch.socketPath(server: "host", environment: [:]) == nil)
        #expect(SocketWatch.socketPath(server: nil, environment: ["PULSE_SERVER": "unix:/a/native", "XDG_RUNTIME_DIR": "/b"]) == "/a/native")
        #expect(SocketWatch.socketPath(server: nil, environment: ["PULSE_RUNTIME_PATH": "/c", "XDG_RUNTIME_DIR": "/b"]) == "/c/native")
        #expect(SocketWatch.socketPath(server: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/7"]) == "/run/user/7/pulse/native")
        #expect(SocketWatch.socketPath(server: nil, environment: [:]) == nil)
    }

    @Test func aSocketCreatedInItsFolderEndsTheWait() async throws {
        let runtime = try TemporaryDirectory(prefix: "lectern-socketwatch")
        defer { runtime.remove() }
        let folder = runtime.appending("pulse")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let socket = folder.appendingPathComponent("native").path
        let existed = Mutex<Bool?>(nil)
        let wait = Task {
            await SocketWatch.waitForChange(near: socket) { exists, watching in
                #expect(watching)
                existed.withLock { $0 = exists }
                return Self.limit(watching)
            }
        }
        // Once the watch is in place (it has asked for its time limit), the server binds its socket.
        _ = try await poll({ existed.withLock { $0 } }, until: { $0 != nil })
        let server = try UnixListener(path: socket)
        defer { server.close() }
        #expect(await wait.value == .changed)
        #expect(existed.withLock { $0 } == false)
    }

    @Test func theFolderAppearingEndsTheWait() async throws {
        let runtime = try TemporaryDirectory(prefix: "lectern-socketwatch")
        defer { runtime.remove() }
        let socket = runtime.appending("pulse").appendingPathComponent("native").path
        let asked = Mutex(false)
        let wait = Task {
            await SocketWatch.waitForChange(near: socket) { _, watching in
                asked.withLock { $0 = true }
                return Self.limit(watching)
            }
        }
        _ = try await poll({ asked.withLock { $0 } }, until: { $0 })
        try FileManager.default.createDirectory(at: runtime.appending("pulse"), withIntermediateDirectories: false)
        #expect(await wait.value == .changed)
    }

    @Test func aSocketThatAlreadyExistsIsReportedForTheShortWait() async throws {
        let runtime = try TemporaryDirectory(prefix: "lectern-socketwatch")
        defer { runtime.remove() }
        let socket = runtime.appending("native").path
        let server = try UnixListener(path: socket)
        defer { server.close() }
        let outcome = await SocketWatch.waitForChange(near: socket) { exists, _ in
            #expect(exists)
            return .milliseconds(10)
        }
        #expect(outcome == .timedOut)
    }

    @Test func cancellingTheTaskEndsTheWait() async throws {
        let runtime = try TemporaryDirectory(prefix: "lectern-socketwatch")
        defer { runtime.remove() }
        let asked = Mutex(false)
        let wait = Task {
            await SocketWatch.waitForChange(near: runtime.appending("native").path) { _, watching in
                asked.withLock { $0 = true }
                return Self.limit(watching)
            }
        }
        _ = try await poll({ asked.withLock { $0 } }, until: { $0 })
        wait.cancel()
        #expect(await wait.value == .cancelled)
    }

    @Test func withNothingToWatchItSaysSoAndOnlySleeps() async throws {
        let watched = Mutex<Bool?>(nil)
        let outcome = await SocketWatch.waitForChange(near: "/nonexistent-lectern/pulse/native") { exists, watching in
            #expect(!exists)
            watched.withLock { $0 = watching }
            return .milliseconds(10)
        }
        #expect(outcome == .timedOut)
        #expect(watched.withLock { $0 } == false)
    }

    @Test func aServerIsConfiguredElsewhereByTheSystemSocketOrADefaultServer() throws {
        let root = try TemporaryDirectory(prefix: "lectern-clientconf")
        defer { root.remove() }
        let home = root.appending("home").path
        let system = root.appending("etc-client.conf").path
        let noSocket = root.appending("no-socket").path
        func elsewhere(_ environment: [String: String], systemSocket: String? = nil) -> Bool {
            SocketWatch.serverConfiguredElsewhere(environment: environment, systemSocket: systemSocket ?? noSocket,
                                                  systemConfig: system)
        }
        func write(_ text: String, _ path: String) throws {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }
        #expect(!elsewhere(["HOME": home]))
        // The system-wide socket.
        let socket = root.appending("native").path
        let server = try UnixListener(path: socket)
        defer { server.close() }
        #expect(elsewhere(["HOME": home], systemSocket: socket))
        // The system's client.conf: commented out, empty, then set.
        try write("; default-server = tcp:x\n# default-server = tcp:y\ndefault-server =\n", system)
        #expect(!elsewhere(["HOME": home]))
        try write("autospawn = no\n  default-server = tcp:host:4713  \n", system)
        #expect(elsewhere(["HOME": home]))
        // The user's own file is read instead of the system's.
        try write("autospawn = no\n", home + "/.config/pulse/client.conf")
        #expect(!elsewhere(["HOME": home]))
        try write("default-server = unix:/elsewhere/native\n", root.appending("xdg/pulse/client.conf").path)
        #expect(elsewhere(["HOME": home, "XDG_CONFIG_HOME": root.appending("xdg").path]))
        // PULSE_CLIENTCONFIG names the one file read.
        #expect(!elsewhere(["HOME": home, "PULSE_CLIENTCONFIG": home + "/.config/pulse/client.conf"]))
        // The system's client.conf.d is read as well.
        try write("default-server = tcp:dotd\n", system + ".d/50-remote.conf")
        #expect(elsewhere(["HOME": home]))
    }

    @Test func nothingHappeningIsATimeout() async throws {
        let runtime = try TemporaryDirectory(prefix: "lectern-socketwatch")
        defer { runtime.remove() }
        #expect(await SocketWatch.waitForChange(near: runtime.appending("native").path) { _, _ in .milliseconds(50) } == .timedOut)
    }
}

/// A listening unix socket, as a sound server binds one.
struct UnixListener {
    let fd: Int32

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RouteTestError("socket failed: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw RouteTestError("path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 1) == 0 else {
            Glibc.close(fd)
            throw RouteTestError("bind/listen \(path) failed: errno \(errno)")
        }
    }

    func close() { Glibc.close(fd) }
}
