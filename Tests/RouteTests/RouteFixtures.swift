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

// MARK: - A headless sound server

/// Which sound server a route test runs against: PulseAudio 16, or PipeWire with WirePlumber and pipewire-pulse
/// (Debian 12's desktop default). lecternd speaks to both through libpulse.
enum SoundServerKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case pulseAudio = "PulseAudio"
    case pipeWire = "PipeWire"

    var testDescription: String { rawValue }
}

/// A sink the test plugged in, and how to unplug it.
struct PluggedSink: Sendable, Hashable {
    let name: String
    /// Its index, as libpulse clients (`pactl list sinks`, lecternd) know it.
    let index: String
    /// PulseAudio: the null sink's module index (`pactl unload-module`). PipeWire: the node's object id
    /// (`pw-cli destroy`).
    let handle: String
}

/// A sound server of the test's own, headless, with one null sink "speakers" (the default). XDG_RUNTIME_DIR and
/// HOME are in a temporary directory (with `autospawn = no`, so that no client ever starts a server of its own);
/// ``environment`` points PULSE_SERVER at its native socket `$D/xdg/pulse/native`.
///
/// - PulseAudio: `pulseaudio --daemonize=no`, no default script, the native protocol with anonymous auth, and
///   "speakers" loaded with it. Sinks are null sinks plugged with `pactl load-module` (they die with the server).
/// - PipeWire: `pipewire`, then `wireplumber` and `pipewire-pulse`, with a session bus of their own (WirePlumber
///   needs one). Sinks are null-audio-sink nodes made with `pw-cli create-node` and `object.linger`: like real
///   devices, they outlive pipewire-pulse, which is the server libpulse clients speak to (``stopPulseServer()``).
///
/// `shutdown()` (or deinit) kills everything with SIGKILL.
final class SoundServer: @unchecked Sendable {
    let kind: SoundServerKind
    let directory: TemporaryDirectory
    /// For clients: pactl, lecternd, pw-cli.
    let environment: [String: String]
    let socketPath: String
    /// PipeWire: WirePlumber's session bus.
    private let bus: PrivateBus?
    /// The servers' own environment (PipeWire: with the bus).
    private let serverEnvironment: [String: String]
    private let lock = NSLock()
    private var processes: [String: Subprocess] = [:]  // by program; guarded by lock

    init(_ kind: SoundServerKind) async throws {
        self.kind = kind
        directory = try TemporaryDirectory(prefix: "lectern-sound")
        let xdg = directory.appending("xdg"), home = directory.appending("home")
        try FileManager.default.createDirectory(at: xdg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(at: home.appendingPathComponent(".config/pulse"), withIntermediateDirectories: true)
        try "autospawn = no\n".write(to: home.appendingPathComponent(".config/pulse/client.conf"), atomically: true, encoding: .utf8)
        socketPath = xdg.path + "/pulse/native"
        let base = ["XDG_RUNTIME_DIR": xdg.path, "HOME": home.path, "XDG_CONFIG_HOME": home.path + "/.config",
                    "XDG_STATE_HOME": home.path + "/.local/state", "XDG_DATA_HOME": home.path + "/.local/share"]
        environment = Subprocess.environment(adding: base.merging(["PULSE_SERVER": "unix:" + socketPath]) { $1 })
        switch kind {
        case .pulseAudio:
            bus = nil
            serverEnvironment = environment
        case .pipeWire:
            let bus = try PrivateBus()
            self.bus = bus
            serverEnvironment = Subprocess.environment(
                adding: base.merging(["DBUS_SESSION_BUS_ADDRESS": bus.address,
                                      "DBUS_SYSTEM_BUS_ADDRESS": bus.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? ""]) { $1 },
                removing: ["PULSE_SERVER", "DISPLAY", "WAYLAND_DISPLAY"])
        }
        do {
            try await start()
        } catch {
            await shutdown()
            throw error
        }
    }

    deinit {
        for process in lock.withLock({ Array(processes.values) }) { process.kill() }  // Subprocess's deinit reaps
        bus?.stop()
    }

    /// The pid of the server libpulse clients speak to (pulseaudio, pipewire-pulse).
    var pid: pid_t? { lock.withLock { processes[pulseServerProgram]?.pid } }

    /// Whether the sinks the test plugged in outlive ``stopPulseServer()`` (PipeWire's nodes do).
    var sinksSurviveRestart: Bool { kind == .pipeWire }

    private var pulseServerProgram: String { kind == .pulseAudio ? "pulseaudio" : "pipewire-pulse" }

    /// Starts everything and waits until `pactl info` answers; PipeWire: with "speakers" made the default sink.
    /// Never blocks a thread of the cooperative pool (the suites run in parallel on 2 cores).
    private func start() async throws {
        let programs = kind == .pulseAudio ? ["pulseaudio", "pactl", "pacmd"] : ["pipewire", "wireplumber", "pipewire-pulse", "pw-cli", "pactl"]
        let missing = programs.filter { Subprocess.findExecutable($0, environment: environment) == nil }
        guard missing.isEmpty else {
            throw RouteTestError("\(missing.joined(separator: ", ")) not installed (scripts/install-deps.sh --test installs the \(kind) packages)")
        }
        switch kind {
        case .pulseAudio:
            try await startPulseServer()
        case .pipeWire:
            try await startPipeWireAndWirePlumber()
            try await startPulseServer()
            _ = try await plug("speakers")
            try await makeSpeakersTheDefaultSink()
        }
    }

    private func startPipeWireAndWirePlumber() async throws {
        try spawn("pipewire", [])
        try await waitUntil("pipewire", answers: "pw-cli", ["info", "0"])
        try spawn("wireplumber", [])
    }

    /// Chooses "speakers" with `pactl set-default-sink`, then waits until it is the default sink. pactl says "Not
    /// supported" until WirePlumber has published its default-nodes metadata (a loaded machine takes a while):
    /// chosen again until it takes.
    private func makeSpeakersTheDefaultSink() async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while (try? await pactl("set-default-sink", "speakers")) == nil {
            guard ContinuousClock.now < deadline else { throw RouteTestError("speakers cannot be made the default sink\n\(log)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await waitUntilSpeakersAreTheDefaultSink(deadline: deadline)
    }

    /// WirePlumber makes "speakers" the default sink: the one chosen with `pactl set-default-sink`, kept in its
    /// state file (`$XDG_STATE_HOME/wireplumber/default-nodes`) and restored when a sink of that name appears.
    private func waitUntilSpeakersAreTheDefaultSink(deadline: ContinuousClock.Instant = .now + .seconds(30)) async throws {
        while try await pactl("info").contains("Default Sink: speakers") == false {
            guard ContinuousClock.now < deadline else { throw RouteTestError("speakers is not the default sink\n\(log)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// PipeWire: SIGKILL to `pipewire` alone, as a crash would, and what a desktop session does next. Debian 12's
    /// user units (/usr/lib/systemd/user) bind wireplumber.service to pipewire.service (`BindsTo=`), so it goes
    /// with it (it also exits by itself, "disconnected from pipewire"); pipewire-pulse.service only `Wants=` it,
    /// so it keeps running: its clients lose their connections ("Connection terminated") and new ones are refused
    /// until pipewire is back. The sinks were nodes of pipewire's and are gone, as a device's are until it is
    /// found again. Idempotent.
    func stopPipeWire() async {
        precondition(kind == .pipeWire)
        await stop("pipewire")
        await stop("wireplumber")
    }

    /// What systemd does after ``stopPipeWire()`` (`Restart=on-failure`; wireplumber.service is `WantedBy=`
    /// pipewire.service): pipewire and WirePlumber start again, and pipewire-pulse, still running, serves libpulse
    /// clients again. "speakers" is plugged in again and becomes the default sink by WirePlumber's doing (a
    /// real device is found again by WirePlumber itself; these null sinks are the test's to make).
    func startPipeWire() async throws {
        precondition(kind == .pipeWire)
        try await startPipeWireAndWirePlumber()
        try await waitUntil(pulseServerProgram, answers: "pactl", ["info"])
        _ = try await plug("speakers")
        try await waitUntilSpeakersAreTheDefaultSink()
    }

    /// Starts the server libpulse clients speak to (again, on the same socket) and waits until `pactl info`
    /// answers. PulseAudio: with "speakers", and nothing else but pacmd's socket (a desktop's default.pa loads it
    /// too), by which ``configuredStreamLatencies()`` reads what a stream asked for.
    func startPulseServer() async throws {
        switch kind {
        case .pulseAudio:
            try spawn("pulseaudio", ["--daemonize=no", "--exit-idle-time=-1", "-n", "--log-target=stderr",
                                     "-L", "module-native-protocol-unix auth-anonymous=1", "-L", "module-cli-protocol-unix",
                                     "-L", "module-null-sink sink_name=speakers"])
        case .pipeWire:
            try spawn("pipewire-pulse", [])
        }
        try await waitUntil(pulseServerProgram, answers: "pactl", ["info"])
    }

    /// SIGKILL to the server libpulse clients speak to, and reaps it (PulseAudio; PipeWire's pipewire-pulse, its
    /// sinks staying). Idempotent.
    func stopPulseServer() async {
        await stop(pulseServerProgram)
    }

    /// Kills and reaps every process of the server, and its bus. Idempotent.
    func shutdown() async {
        for program in ["pipewire-pulse", "pulseaudio", "wireplumber", "pipewire"] { await stop(program) }
        bus?.stop()
    }

    private func spawn(_ program: String, _ arguments: [String]) throws {
        let log = directory.appending("\(program).log")
        let process = try Subprocess(program, arguments, environment: serverEnvironment, stdout: .appendingToFile(log),
                                     stderr: .appendingToFile(log))
        lock.withLock { processes[program] = process }
    }

    private func stop(_ program: String) async {
        guard let process = lock.withLock({ processes.removeValue(forKey: program) }) else { return }
        process.kill()
        _ = await process.waitForExit(timeout: .seconds(10))
    }

    /// Waits until `tool arguments` exits 0 (ready in ~0.1 s; generous because the whole test run starts every
    /// suite at once on 2 cores, and three of them start a sound server).
    private func waitUntil(_ program: String, answers tool: String, _ arguments: [String]) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < deadline {
            guard let process = lock.withLock({ processes[program] }), process.isRunning else {
                let how = lock.withLock { processes[program] }?.termination.map { "\($0)" } ?? "?"
                throw RouteTestError("\(program) exited: \(how)\n\(log)")
            }
            if let result = try? await Subprocess.run(tool, arguments, env: environment, timeout: .seconds(5)), result.status == 0 {
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Where it is stuck, if it is: its state and the kernel function it waits in.
        let pid = lock.withLock { processes[program] }?.pid ?? 0
        let state = ["status", "wchan"].map { (try? String(contentsOfFile: "/proc/\(pid)/\($0)", encoding: .utf8)) ?? "" }
        let stuck = "\(state[0].split(separator: "\n").first { $0.hasPrefix("State:") } ?? "no state"), wchan \(state[1])"
        throw RouteTestError("\(program) did not answer \(tool) \(arguments.joined(separator: " ")) within 90 s (\(stuck))\n\(log)")
    }

    /// The servers' logs.
    var log: String {
        ["pulseaudio", "pipewire", "wireplumber", "pipewire-pulse"].compactMap { program in
            (try? String(contentsOf: directory.appending("\(program).log"), encoding: .utf8)).map { "== \(program)\n\($0)" }
        }.joined(separator: "\n")
    }

    /// Runs pactl against this server; throws unless it exits 0. Returns its trimmed stdout.
    @discardableResult
    func pactl(_ arguments: String...) async throws -> String {
        try await run("pactl", arguments)
    }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String]) async throws -> String {
        let result = try await Subprocess.run(tool, arguments, env: environment, timeout: .seconds(10))
        guard result.status == 0 else {
            throw RouteTestError("\(tool) \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The latency each playback stream is configured with: fixed when the stream is made, from the buffer its client
    /// asked for (pulsesink: `buffer-time`, less a request of `latency-time` each side on PulseAudio), as the server's
    /// own tools show it. Not "Buffer Latency" in `pactl list sink-inputs`: that is what the stream holds at the moment
    /// it is read, and moves (27 ms of a 2 s stream was read once on a loaded machine, the sink holding 989 ms).
    ///
    /// - PulseAudio: twice `pacmd list-sink-inputs`' "requested latency", the sink's share of the stream's buffer. A
    ///   stream that adjusts its latency (pulsesink's does) is split in two halves, less a request each side: "Final
    ///   latency 2000.00 ms = 990.00 ms + 2*10.00 ms + 990.00 ms" in the server's log. Measured with pulsesink's
    ///   `buffer-time` 0.2, 0.5, 1 and 2 s: 90, 240, 490 and 990 ms.
    /// - PipeWire: pipewire-pulse keeps what it gave the stream as the stream's properties: its buffer
    ///   (`pulse.attr.tlength`, in bytes of its sample format) and the sink's share (`node.latency`, frames/rate, at
    ///   most the quantum limit, 8192) add up to the buffer asked for. 2 s of s16le stereo at 44100 Hz: 320032 bytes
    ///   and 8192/44100; 200 ms: 19404 bytes and 3969/44100.
    func configuredStreamLatencies() async throws -> [Duration] {
        switch kind {
        case .pulseAudio:
            return try await run("pacmd", ["list-sink-inputs"]).split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                guard line.contains("requested latency:"), let ms = fields.dropFirst(2).first.flatMap({ Double($0) }) else {
                    return nil
                }
                return .microseconds(Int64((2 * ms * 1000).rounded()))
            }
        case .pipeWire:
            // A stream still without them is left out (the caller waits for one).
            return try await pactl("list", "sink-inputs").components(separatedBy: "Sink Input #").dropFirst().compactMap { block in
                let lines = block.split(separator: "\n")
                func property(_ name: String) -> String? {
                    lines.first { $0.contains("\(name) = ") }.flatMap { $0.split(separator: "\"").dropFirst().first }.map(String.init)
                }
                // "Sample Specification: s16le 2ch 44100Hz"
                let spec = lines.first { $0.contains("Sample Specification:") }?.split(separator: " ").suffix(3).map(String.init) ?? []
                guard spec.count == 3, let channels = Int(spec[1].dropLast(2)), let rate = Double(spec[2].dropLast(2)),
                      let tlength = property("pulse.attr.tlength").flatMap(Double.init),
                      case let latency = property("node.latency")?.split(separator: "/").compactMap({ Double($0) }) ?? [],
                      latency.count == 2, latency[1] > 0, channels > 0, rate > 0 else { return nil }
                let format = spec[0]
                let sampleBytes = format.contains("24-32") ? 4 : format.contains("16") ? 2 : format.contains("24") ? 3
                    : format.contains("32") ? 4 : 1
                let seconds = tlength / Double(sampleBytes * channels) / rate + latency[0] / latency[1]
                return .microseconds(Int64((seconds * 1e6).rounded()))
            }
        }
    }

    /// The indices of the sinks named `name` (`pactl list short sinks`).
    func sinkIndices(named name: String) async throws -> [String] {
        try await pactl("list", "short", "sinks").split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t")
            return fields.count > 1 && fields[1] == name ? String(fields[0]) : nil
        }
    }

    /// The sink index each playback stream plays to (`pactl list short sink-inputs`).
    func streamSinks() async throws -> [String] {
        try await pactl("list", "short", "sink-inputs").split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t")
            return fields.count > 1 ? String(fields[1]) : nil
        }
    }

    /// Plugs a null sink named `name` in (PipeWire allows a second of one name) and waits until libpulse clients
    /// see it.
    func plug(_ name: String) async throws -> PluggedSink {
        let before = Set(try await sinkIndices(named: name))
        let module: String?
        switch kind {
        case .pulseAudio:
            module = try await pactl("load-module", "module-null-sink", "sink_name=\(name)")
        case .pipeWire:
            module = nil
            try await run("pw-cli", ["create-node", "adapter", "{ factory.name=support.null-audio-sink node.name=\(name) "
                                     + "media.class=Audio/Sink object.linger=true audio.position=[ FL FR ] }"])
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if let index = try await sinkIndices(named: name).first(where: { !before.contains($0) }) {
                if let module { return PluggedSink(name: name, index: index, handle: module) }
                return PluggedSink(name: name, index: index, handle: try await objectID(ofSink: index))
            }
            guard ContinuousClock.now < deadline else { throw RouteTestError("no new sink \(name) after plugging it\n\(log)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// PipeWire: the object id of the node behind sink `index` (its `object.id` property).
    private func objectID(ofSink index: String) async throws -> String {
        let sinks = try await pactl("list", "sinks")
        guard let block = sinks.components(separatedBy: "Sink #").first(where: { $0.hasPrefix(index + "\n") }),
              let line = block.split(separator: "\n").first(where: { $0.contains("object.id = ") }),
              let id = line.split(separator: "\"").dropFirst().first else {
            throw RouteTestError("no object.id for sink #\(index):\n\(sinks)")
        }
        return String(id)
    }

    func unplug(_ sink: PluggedSink) async throws {
        switch kind {
        case .pulseAudio: try await pactl("unload-module", sink.handle)
        case .pipeWire: try await run("pw-cli", ["destroy", sink.handle])
        }
    }
}

/// When the test's own libpulse client (the PulseAudio module) hears of each sink removal.
final class SinkRemovals: Sendable {
    private final class Times: Sendable {
        let list = Mutex<[ContinuousClock.Instant]>([])
    }
    private let connection: PulseConnection
    private let times = Times()

    init(server: SoundServer) async throws {
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

// MARK: - lecternd on a private bus, playing through the test's sound server

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

    let server: SoundServer
    let bus: PrivateBus
    let directory: TemporaryDirectory
    let daemon: Subprocess
    let client: BusConnection
    let signals = SignalLog()
    let logFile: URL
    /// The "headphones" sink while it is plugged in.
    let headphones = Mutex<PluggedSink?>(nil)

    /// A fresh sound server of `kind` with "speakers" (default) and "headphones" plugged in, and lecternd playing
    /// to `audioSink`.
    init(_ kind: SoundServerKind, audioSink: String = "pulsesink device=headphones",
         extraArguments: [String] = []) async throws {
        server = try await SoundServer(kind)
        bus = try PrivateBus()
        directory = try TemporaryDirectory(prefix: "lectern-route")
        logFile = directory.appending("lecternd.log")
        let sink = try await server.plug("headphones")
        headphones.withLock { $0 = sink }
        var env = bus.environment
        for (key, value) in server.environment where ["XDG_RUNTIME_DIR", "PULSE_SERVER", "HOME"].contains(key) {
            env[key] = value
        }
        env["XDG_CACHE_HOME"] = directory.appending("cache").path
        env["GST_REGISTRY"] = try await GStreamerRegistry.path()
        client = try BusConnection(address: bus.address)
        let stream = try await client.signals(MatchRule())
        let log = signals
        Task.detached { for await message in stream { log.append(message) } }
        daemon = try Subprocess(builtExecutable("lecternd").path,
                                ["--audio-sink", audioSink, "--log-level", "debug"] + extraArguments,
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

    /// SIGTERM; expects exit 0 and no GLib criticals in its log; tears everything down.
    func finish(sourceLocation: SourceLocation = #_sourceLocation) async {
        #expect(daemon.isRunning, "lecternd died during the test:\n\(log)\n\(server.log)", sourceLocation: sourceLocation)
        if daemon.isRunning {
            daemon.terminate()
            let status = await daemon.waitForExit(timeout: .seconds(15))
            #expect(status == 0, "lecternd did not exit 0 on SIGTERM:\n\(log)", sourceLocation: sourceLocation)
            if status == nil { daemon.kill() }
        }
        let criticals = log.split(separator: "\n").filter { $0.contains("-CRITICAL **") }
        #expect(criticals.isEmpty, "\(criticals.count) criticals in lecternd's log:\n\(criticals.prefix(5).joined(separator: "\n"))",
                sourceLocation: sourceLocation)
        client.close()
        bus.stop()
        await server.shutdown()
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
        let path = interface.hasPrefix("org.lectern.") ? Self.lecternPath : Self.mprisPath
        let reply = try await call("Get", [.string(interface), .string(property)], interface: "org.freedesktop.DBus.Properties",
                                   path: path)
        guard let value = reply.first?.unwrapped else { throw RouteTestError("Get \(property): \(reply)") }
        return value
    }

    func set(_ property: String, _ value: DBusValue, interface: String = RouteDaemon.output) async throws {
        let path = interface.hasPrefix("org.lectern.") ? Self.lecternPath : Self.mprisPath
        try await call("Set", [.string(interface), .string(property), .variant(value)],
                       interface: "org.freedesktop.DBus.Properties", path: path)
    }

    func status() async throws -> String { try await get("PlaybackStatus").string ?? "?" }
    func position() async throws -> Int64 { try await get("Position").int64 ?? -1 }
    func currentURL() async throws -> String { try await get("Metadata").stringKeyedDictionary?["xesam:url"]?.string ?? "" }

    /// Position and the file it is in, read together: nil when the file changed between the two reads (the position
    /// could be the other file's: a file's end read with the next one's URL).
    func positionReading() async throws -> PositionReading? {
        let asked = ContinuousClock.now
        let before = try await currentURL()
        let position = try await position()
        let url = try await currentURL()
        guard url == before else { return nil }
        return PositionReading(asked: asked, answered: .now, position: position, url: url)
    }
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

    /// Every output name lecternd published so far: CurrentOutput's values and RouteChanged's outputs.
    var publishedOutputs: [String] {
        signals.all.compactMap { entry -> String? in
            let message = entry.message
            if message.member == "RouteChanged" { return message.arguments.first?.fields?[1].string }
            guard message.member == "PropertiesChanged", message.arguments.first?.string == Self.output,
                  message.arguments.count > 1 else { return nil }
            return message.arguments[1].stringKeyedDictionary?["CurrentOutput"]?.string
        }
    }

    /// A PropertiesChanged of the MPRIS Player carrying PlaybackStatus = `status`.
    static func isStatusChange(_ message: ReceivedMessage, _ status: String) -> Bool {
        message.interface == "org.freedesktop.DBus.Properties" && message.member == "PropertiesChanged"
            && message.path?.rawValue == mprisPath && message.arguments.first?.string == player
            && message.arguments.count > 1 && message.arguments[1].stringKeyedDictionary?["PlaybackStatus"]?.string == status
    }
}

/// Runs `body` with a fresh ``RouteDaemon`` (the arguments are its `init`'s), then finishes it, also when `body`
/// throws.
func withRouteDaemon(_ kind: SoundServerKind, audioSink: String = "pulsesink device=headphones", extraArguments: [String] = [],
                     sourceLocation: SourceLocation = #_sourceLocation, _ body: (RouteDaemon) async throws -> Void) async throws {
    let d = try await RouteDaemon(kind, audioSink: audioSink, extraArguments: extraArguments)
    do {
        try await body(d)
    } catch {
        await d.finish(sourceLocation: sourceLocation)
        throw error
    }
    await d.finish(sourceLocation: sourceLocation)
}

extension RouteDaemon {
    /// Imports the book in `folder`, sets its `settings` (SetBookSettings) if any, and makes it the current one, paused.
    func activateBook(in folder: URL, settings: [String: DBusValue] = [:]) async throws {
        func library(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
            try await call(member, arguments, interface: "org.lectern.Library1", path: RouteDaemon.lecternPath)
        }
        let imported = signals.count
        _ = try await library("Import", [.string(folder.path), .string("")])
        let finished = await signals.wait(since: imported, timeout: .seconds(60)) { $0.member == "ImportFinished" }
        let id = try #require(finished?.message.arguments[1].elements?.first?.int64, "no book imported")
        if !settings.isEmpty { _ = try await library("SetBookSettings", [.int64(id), .vardict(settings)]) }
        _ = try await library("ActivateBook", [.int64(id), .boolean(false)])
        _ = try await waitFor(status) { $0 == "Paused" }
    }
}

/// One reading of Position: asked at `asked`, answered at `answered`, in the file `url` (Metadata's xesam:url).
struct PositionReading {
    let asked: ContinuousClock.Instant
    let answered: ContinuousClock.Instant
    let position: Int64
    let url: String
}

/// The moves of Position between two readings of the same file with no Seeked (received at `seeked`) between them or
/// within a second after: back, or ahead more than the Rate (`rate`) allows in the longest time that can have passed.
func movesWithoutSeeked(_ readings: [PositionReading], seeked: [ContinuousClock.Instant], rate: Double = 1) -> [String] {
    var unannounced: [String] = []
    for (earlier, later) in zip(readings, readings.dropFirst()) where earlier.url == later.url {
        let told = seeked.contains { $0 > earlier.asked && $0 <= later.answered + .milliseconds(1000) }
        guard !told else { continue }
        let most = Int64((later.answered - earlier.asked).milliseconds * 1000 * rate) + 150_000
        let moved = later.position - earlier.position
        if moved < 0 || moved > most {
            unannounced.append("\(earlier.position) → \(later.position) µs in at most \(most / 1000) ms")
        }
    }
    return unannounced
}

extension Duration {
    var milliseconds: Double {
        let (s, atto) = components
        return Double(s) * 1000 + Double(atto) / 1e15
    }
}
