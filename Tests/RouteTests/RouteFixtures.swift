import DBus
import Foundation
import PulseAudio
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

struct RouteTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - A headless PulseAudio

/// A PulseAudio of the test's own: `--daemonize=no`, no default script, the native protocol with anonymous auth
/// on `$D/xdg/pulse/native`, one null sink "speakers" (the default). XDG_RUNTIME_DIR and HOME are in a temporary
/// directory; ``environment`` points PULSE_SERVER at it. `stop()` (or deinit) kills it with SIGKILL.
final class PulseServer: @unchecked Sendable {
    let directory: TemporaryDirectory
    let environment: [String: String]
    let socketPath: String
    private let lock = NSLock()
    private var process: Subprocess?  // guarded by lock

    init() async throws {
        directory = try TemporaryDirectory(prefix: "lectern-pulse")
        let xdg = directory.appending("xdg"), home = directory.appending("home")
        try FileManager.default.createDirectory(at: xdg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        socketPath = xdg.path + "/pulse/native"
        environment = Subprocess.environment(adding: ["XDG_RUNTIME_DIR": xdg.path, "HOME": home.path,
                                                      "PULSE_SERVER": "unix:" + socketPath])
        try await start()
    }

    deinit {
        lock.withLock { process }?.kill()  // Subprocess's own deinit reaps it
    }

    var pid: pid_t? { lock.withLock { process?.pid } }

    /// Starts the server (again, on the same socket) and waits until `pactl info` answers. Never blocks a thread
    /// of the cooperative pool (the suites run in parallel on 2 cores).
    func start() async throws {
        let process = try Subprocess(
            "pulseaudio",
            ["--daemonize=no", "--exit-idle-time=-1", "-n", "--log-target=file:\(directory.path)/pulse.log",
             "-L", "module-native-protocol-unix auth-anonymous=1", "-L", "module-null-sink sink_name=speakers"],
            environment: environment, stdout: .null, stderr: .appendingToFile(directory.appending("pulse.stderr")))
        lock.withLock { self.process = process }
        // Ready in ~0.1 s; generous because the whole test run starts many suites at once on 2 cores.
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                throw RouteTestError("pulseaudio exited: \(process.termination.map { "\($0)" } ?? "?")\n\(log)")
            }
            if let result = try? await Subprocess.run("pactl", ["info"], env: environment, timeout: .seconds(5)),
               result.status == 0 {
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw RouteTestError("pulseaudio did not answer within 30 s\n\(log)")
    }

    /// SIGKILL, and reaps it. Idempotent.
    func stop() async {
        guard let process = lock.withLock({ () -> Subprocess? in
            defer { self.process = nil }
            return self.process
        }) else { return }
        process.kill()
        _ = await process.waitForExit(timeout: .seconds(10))
    }

    var log: String {
        ((try? String(contentsOf: directory.appending("pulse.log"), encoding: .utf8)) ?? "")
            + ((try? String(contentsOf: directory.appending("pulse.stderr"), encoding: .utf8)) ?? "")
    }

    /// Runs pactl against this server; throws unless it exits 0. Returns its trimmed stdout.
    @discardableResult
    func pactl(_ arguments: String...) async throws -> String {
        let result = try await Subprocess.run("pactl", arguments, env: environment, timeout: .seconds(10))
        guard result.status == 0 else {
            throw RouteTestError("pactl \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Plugs a null sink in; returns its module index (for `unplug`).
    func plug(_ sinkName: String) async throws -> String {
        try await pactl("load-module", "module-null-sink", "sink_name=\(sinkName)")
    }

    func unplug(module: String) async throws {
        try await pactl("unload-module", module)
    }
}

/// When the test's own libpulse client (the PulseAudio module) hears of each sink removal.
final class SinkRemovals: Sendable {
    private final class Times: Sendable {
        let list = Mutex<[ContinuousClock.Instant]>([])
    }
    private let connection: PulseConnection
    private let times = Times()

    init(server: PulseServer) async throws {
        connection = try await PulseConnection.connect(server: "unix:" + server.socketPath, applicationName: "route test")
        let events = connection.events
        let times = self.times
        Task.detached {
            for await event in events {
                if case .object(let change) = event, change.facility == .sink, change.change == .remove {
                    times.list.withLock { $0.append(.now) }
                }
            }
        }
    }

    var count: Int { times.list.withLock { $0.count } }

    func first(since mark: Int, timeout: Duration = .seconds(2)) async -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let time = times.list.withLock({ $0.count > mark ? $0[mark] : nil }) { return time }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return nil
    }
}

// MARK: - Audio

/// A 60 s Ogg file, made once per test process.
enum RouteMedia {
    private static let cached = Mutex<Result<URL, any Error>?>(nil)

    /// `longFile()` on a GCD thread: making it runs gst-launch for a second or two.
    static func longFileAsync() async throws -> URL {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try longFile() }) }
        }
    }

    static func longFile() throws -> URL {
        try cached.withLock { cached in
            if let cached { return try cached.get() }
            let result = Result { () throws -> URL in
                let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
                let dir = URL(fileURLWithPath: base).appendingPathComponent("lectern-route-media-\(getpid())")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let file = dir.appendingPathComponent("long.ogg")
                try AudioFiles.ogg(file, seconds: 60)
                atexit { try? FileManager.default.removeItem(atPath: "/tmp/lectern-route-media-\(getpid())") }
                return file
            }
            cached = result
            return try result.get()
        }
    }
}

// MARK: - lecternd on a private bus, playing through the test's PulseAudio

/// Signals received by the test's client, with their arrival times.
final class SignalLog: Sendable {
    struct Entry: Sendable {
        let time: ContinuousClock.Instant
        let message: ReceivedMessage
    }
    private let entries = Mutex<[Entry]>([])

    func append(_ message: ReceivedMessage) { entries.withLock { $0.append(Entry(time: .now, message: message)) } }
    var all: [Entry] { entries.withLock { $0 } }
    var count: Int { entries.withLock { $0.count } }

    /// Waits for the first entry after `mark` that satisfies `predicate`.
    func wait(since mark: Int, timeout: Duration, _ predicate: (ReceivedMessage) -> Bool) async -> Entry? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = entries.withLock({ Array($0.dropFirst(mark)) }).first(where: { predicate($0.message) }) {
                return found
            }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(1))
        }
    }
}

final class RouteDaemon: Sendable {
    static let busName = "org.lectern.Lectern1"
    static let mprisPath = "/org/mpris/MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let lecternPath = "/org/lectern/Lectern1"
    static let output = "org.lectern.Output1"

    let pulse: PulseServer
    let bus: PrivateBus
    let directory: TemporaryDirectory
    let daemon: Subprocess
    let client: BusConnection
    let signals = SignalLog()
    let logFile: URL
    /// The module index of the "headphones" null sink while it is plugged in.
    let headphonesModule = Mutex<String?>(nil)

    /// A fresh PulseAudio with "speakers" (default) and "headphones" plugged in, and lecternd playing to
    /// `pulsesink device=headphones`.
    init(extraArguments: [String] = []) async throws {
        pulse = try await PulseServer()
        bus = try PrivateBus()
        directory = try TemporaryDirectory(prefix: "lectern-route")
        logFile = directory.appending("lecternd.log")
        let module = try await pulse.plug("headphones")
        headphonesModule.withLock { $0 = module }
        var env = bus.environment
        for (key, value) in pulse.environment where ["XDG_RUNTIME_DIR", "PULSE_SERVER", "HOME"].contains(key) {
            env[key] = value
        }
        env["XDG_CACHE_HOME"] = directory.appending("cache").path
        env["GST_REGISTRY"] = try await GStreamerRegistry.path()
        client = try BusConnection(address: bus.address)
        let stream = try await client.signals(MatchRule())
        let log = signals
        Task.detached { for await message in stream { log.append(message) } }
        daemon = try Subprocess(builtExecutable("lecternd").path,
                                ["--audio-sink", "pulsesink device=headphones", "--log-level", "debug"] + extraArguments,
                                environment: env, stdout: .appendingToFile(logFile), stderr: .appendingToFile(logFile))
        let deadline = ContinuousClock.now + .seconds(10)
        while !(try await nameHasOwner("org.mpris.MediaPlayer2.lectern")) {
            guard daemon.isRunning, ContinuousClock.now < deadline else {
                daemon.kill()
                throw RouteTestError("lecternd did not start:\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// SIGTERM; expects exit 0; tears everything down.
    func finish(sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(daemon.isRunning, "lecternd died during the test:\n\(log)", sourceLocation: sourceLocation)
        if daemon.isRunning {
            daemon.terminate()
            let status = await daemon.waitForExit(timeout: .seconds(15))
            #expect(status == 0, "lecternd did not exit 0 on SIGTERM:\n\(log)", sourceLocation: sourceLocation)
            if status == nil { daemon.kill() }
        }
        client.close()
        bus.stop()
        await pulse.stop()
    }

    func nameHasOwner(_ name: String) async throws -> Bool {
        try await client.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                              member: "NameHasOwner", [.string(name)], timeout: .seconds(5)).first?.bool ?? false
    }

    @discardableResult
    func call(_ member: String, _ arguments: [DBusValue] = [], interface: String = RouteDaemon.player,
              path: String = RouteDaemon.mprisPath) async throws -> [DBusValue] {
        try await client.call(Self.busName, path: path, interface: interface, member: member, arguments, timeout: .seconds(10))
    }

    func get(_ property: String, interface: String = RouteDaemon.player) async throws -> DBusValue {
        let path = interface == Self.output ? Self.lecternPath : Self.mprisPath
        let reply = try await call("Get", [.string(interface), .string(property)], interface: "org.freedesktop.DBus.Properties",
                                   path: path)
        guard let value = reply.first?.unwrapped else { throw RouteTestError("Get \(property): \(reply)") }
        return value
    }

    func set(_ property: String, _ value: DBusValue, interface: String = RouteDaemon.output) async throws {
        let path = interface == Self.output ? Self.lecternPath : Self.mprisPath
        try await call("Set", [.string(interface), .string(property), .variant(value)],
                       interface: "org.freedesktop.DBus.Properties", path: path)
    }

    func status() async throws -> String { try await get("PlaybackStatus").string ?? "?" }
    func position() async throws -> Int64 { try await get("Position").int64 ?? -1 }
    func currentOutput() async throws -> String { try await get("CurrentOutput", interface: Self.output).string ?? "?" }
    /// (kind, output, port, action, unix µs)
    func lastRouteEvent() async throws -> [DBusValue] { try await get("LastRouteEvent", interface: Self.output).fields ?? [] }

    /// Polls `read` every 5 ms until `condition` holds or `timeout` passes; returns the last value.
    @discardableResult
    func waitFor<T: Sendable>(_ read: () async throws -> T, timeout: Duration = .seconds(5),
                              _ condition: (T) -> Bool) async throws -> T {
        try await poll(timeout: timeout, every: .milliseconds(5), read, until: condition)
    }

    /// Opens the long file and waits until it plays on "headphones" with the position moving.
    func startPlaying() async throws {
        try await call("OpenUri", [.string(try await RouteMedia.longFileAsync().absoluteString)])
        let status = try await waitFor(self.status) { $0 == "Playing" }
        guard status == "Playing" else { throw RouteTestError("not Playing after OpenUri: \(status)\n\(log)") }
        let output = try await waitFor(self.currentOutput) { $0 == "headphones" }
        guard output == "headphones" else { throw RouteTestError("CurrentOutput is \(output), not headphones\n\(log)") }
        let position = try await waitFor(self.position, timeout: .seconds(10)) { $0 >= 300_000 }
        guard position >= 300_000 else { throw RouteTestError("the position does not move: \(position)\n\(log)") }
    }

    /// A PropertiesChanged of the MPRIS Player carrying PlaybackStatus = `status`.
    static func isStatusChange(_ message: ReceivedMessage, _ status: String) -> Bool {
        message.interface == "org.freedesktop.DBus.Properties" && message.member == "PropertiesChanged"
            && message.path?.rawValue == mprisPath && message.arguments.first?.string == player
            && message.arguments.count > 1 && message.arguments[1].stringKeyedDictionary?["PlaybackStatus"]?.string == status
    }
}

extension Duration {
    var milliseconds: Double {
        let (s, atto) = components
        return Double(s) * 1000 + Double(atto) / 1e15
    }
}
