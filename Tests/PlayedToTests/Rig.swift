import DBus
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

struct RigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One UPnP action for the control point: `in` its arguments, `out` the results to read.
struct UPnPAction: Encodable {
    let service: String
    let action: String
    var `in`: [String: String] = [:]
    var out: [String] = []

    static func avTransport(_ action: String, _ arguments: [String: String] = [:], out: [String] = []) -> UPnPAction {
        UPnPAction(service: "AVTransport", action: action, in: ["InstanceID": "0"].merging(arguments) { $1 }, out: out)
    }
    static func renderingControl(_ action: String, _ arguments: [String: String] = [:], out: [String] = []) -> UPnPAction {
        UPnPAction(service: "RenderingControl", action: action,
                   in: ["InstanceID": "0", "Channel": "Master"].merging(arguments) { $1 }, out: out)
    }
}

/// The control point's answer to one action.
struct UPnPAnswer: Decodable, CustomStringConvertible {
    let ok: Bool
    var out: [String: String]?
    var code: Int?
    var message: String?
    var description: String { ok ? "ok \(out ?? [:])" : "error \(code ?? 0) \(message ?? "")" }
}

/// Everything a test of being played to needs, in a network namespace made for it: a private bus (a unix socket: the
/// test's client reaches it from outside the namespace), lecternd on it playing into a fake sink that keeps time,
/// an HTTP server with Range requests serving generated Ogg files, Rygel with the test's own configuration
/// (`$XDG_CONFIG_HOME/rygel.conf`: only its MPRIS plugin, on the namespace's loopback), and, per call of ``upnp(_:)``,
/// a GUPnP control point. `with` removes it all at the end, the test failed or not.
final class PlayedToRig: Sendable {
    let namespace: NetworkNamespace
    let bus: PrivateBus
    let directory: TemporaryDirectory
    let environment: [String: String]
    let client: BusConnection
    let daemon: Subprocess
    let http: Subprocess
    let rygel: Subprocess
    /// The HTTP server's port on the namespace's 127.0.0.1.
    let port: Int
    /// A 20 s book (one Ogg file) to be paused for a stream.
    let book: URL
    /// The positions of the Seeked signals lecternd sent, in order.
    let seeked = SeekedLog()

    static let streamSeconds = 30.0
    static let streamTitle = "Radio-Lectern"
    /// The 30 s Ogg stream (tagged with ``streamTitle``), as the control point gives it.
    var streamURI: String { "http://127.0.0.1:\(port)/stream.ogg" }

    /// `ranges`: whether the HTTP server answers Range requests with the file's length, or as a live stream (neither).
    static func with(ranges: Bool = true, _ body: (PlayedToRig) async throws -> Void) async throws {
        let namespace = try NetworkNamespace()
        let rig: PlayedToRig
        do {
            rig = try await PlayedToRig(namespace: namespace, ranges: ranges)
        } catch {
            namespace.remove()
            throw error
        }
        do {
            try await body(rig)
        } catch {
            await rig.finish(checkExit: false)
            throw error
        }
        await rig.finish(checkExit: true)
    }

    private init(namespace: NetworkNamespace, ranges: Bool) async throws {
        self.namespace = namespace
        bus = try PrivateBus()
        directory = try TemporaryDirectory(prefix: "lectern-played-to")
        var env = bus.environment
        for (variable, folder) in [("XDG_CACHE_HOME", "cache"), ("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config"),
                                   ("XDG_STATE_HOME", "state"), ("HOME", "home")] {
            let url = directory.appending(folder)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            env[variable] = url.path
        }
        env["GST_REGISTRY"] = try await GStreamerRegistry.path()
        environment = env
        // Rygel's configuration: only the MPRIS plugin, announced on the loopback.
        try rygelConfiguration(enabling: "MPRIS").write(to: directory.appending("config/rygel.conf"), atomically: true, encoding: .utf8)

        let media = directory.appending("media")
        book = directory.appending("book/chapter.ogg")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: book.deletingLastPathComponent(), withIntermediateDirectories: true)
        try AudioFiles.ogg(book, seconds: 20, frequency: 330)
        let tagged = try await Subprocess.run("gst-launch-1.0", [
            "-q", "audiotestsrc", "num-buffers=\(AudioFiles.buffers(forSeconds: Self.streamSeconds))", "!", "audioconvert",
            "!", "taginject", "tags=title=\(Self.streamTitle),artist=Ann-Caster", "!", "vorbisenc", "!", "oggmux",
            "!", "filesink", "location=\(media.appendingPathComponent("stream.ogg").path)",
        ], timeout: .seconds(60))
        guard tagged.status == 0 else { throw RigError("cannot make the stream: \(tagged.stderr)") }

        client = try BusConnection(address: bus.address)
        let stream = try await client.signals(MatchRule(interface: "org.mpris.MediaPlayer2.Player", member: "Seeked"))
        Task.detached { [seeked] in
            for await message in stream {
                if let position = message.arguments.first?.int64 { seeked.positions.withLock { $0.append(position) } }
            }
        }

        let peers = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers")
        let (ip, daemonArguments) = namespace.exec([builtExecutable("lecternd").path, "--audio-sink", "fakesink sync=true",
                                                    "--cache-directory", directory.appending("cache").path])
        daemon = try Subprocess(ip, daemonArguments, environment: env, stdout: .file(directory.appending("lecternd.log")),
                                stderr: .appendingToFile(directory.appending("lecternd.log")))
        let (_, httpArguments) = namespace.exec(["/usr/bin/python3", peers.appendingPathComponent("range_server.py").path, media.path]
                                                + (ranges ? [] : ["--live"]))
        http = try Subprocess(ip, httpArguments, environment: env, stdout: .pipe, stderr: .file(directory.appending("http.log")))
        guard let line = await http.readLine(timeout: .seconds(20)), let port = Int(line.trimmingCharacters(in: .whitespaces)) else {
            throw RigError("the HTTP server did not say its port")
        }
        self.port = port
        // lecternd first: Rygel's MPRIS plugin lists the players on the bus when it starts.
        let deadline = ContinuousClock.now + .seconds(20)
        while try await !Self.nameHasOwner("org.mpris.MediaPlayer2.lectern", on: client) {
            guard daemon.isRunning, ContinuousClock.now < deadline else {
                let log = (try? String(contentsOf: directory.appending("lecternd.log"), encoding: .utf8)) ?? ""
                throw RigError("lecternd did not own its MPRIS name: \(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let (_, rygelArguments) = namespace.exec(["/usr/bin/rygel"])
        rygel = try Subprocess(ip, rygelArguments, environment: env, stdout: .file(directory.appending("rygel.log")),
                               stderr: .appendingToFile(directory.appending("rygel.log")))
    }

    var daemonLog: String { (try? String(contentsOf: directory.appending("lecternd.log"), encoding: .utf8)) ?? "" }

    /// Stops lecternd (SIGTERM: it exits 0), then kills the peers, removes the namespace and the files.
    func finish(checkExit: Bool) async {
        daemon.terminate()
        let status = await daemon.waitForExit(timeout: .seconds(15))
        if checkExit { #expect(status == 0, "lecternd did not exit 0 on SIGTERM:\n\(daemonLog)") }
        for process in [daemon, rygel, http] where process.isRunning {
            process.kill()
            _ = await process.waitForExit(timeout: .seconds(5))
        }
        client.close()
        bus.stop()
        namespace.remove()
        directory.remove()
    }

    // MARK: - The control point

    /// Runs a GUPnP control point in the namespace: it finds the renderer named "Lectern" (within 20 s) and makes
    /// `actions` in order; their answers.
    func upnp(_ actions: UPnPAction...) async throws -> [UPnPAnswer] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers/control_point.py")
        let json = String(decoding: try JSONEncoder().encode(actions), as: UTF8.self)
        let (ip, arguments) = namespace.exec(["/usr/bin/python3", script.path, "Lectern", "20", json])
        let result = try await Subprocess.run(ip, arguments, env: environment, timeout: .seconds(60))
        guard result.status == 0 else { throw RigError("the control point failed (\(result.status)): \(result.stderr)") }
        let answers = try result.stdout.split(separator: "\n").map { try JSONDecoder().decode(UPnPAnswer.self, from: Data($0.utf8)) }
        guard answers.count == actions.count else { throw RigError("the control point answered \(answers): \(result.stderr)") }
        return answers
    }

    /// One action, which must succeed; its results.
    @discardableResult
    func upnpOK(_ action: UPnPAction, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: String] {
        let answer = try #require(try await upnp(action).first, sourceLocation: sourceLocation)
        #expect(answer.ok, "\(action.action): \(answer)", sourceLocation: sourceLocation)
        return answer.out ?? [:]
    }

    // MARK: - MPRIS

    static let mpris = "org.mpris.MediaPlayer2.lectern"
    static let path = "/org/mpris/MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"

    static func nameHasOwner(_ name: String, on client: BusConnection) async throws -> Bool {
        try await client.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                              member: "NameHasOwner", [.string(name)], timeout: .seconds(5)).first?.bool ?? false
    }

    @discardableResult
    func call(_ method: String, _ arguments: [DBusValue] = [], interface: String = player) async throws -> [DBusValue] {
        try await client.call(Self.mpris, path: Self.path, interface: interface, member: method, arguments, timeout: .seconds(10))
    }

    func get(_ property: String, interface: String = player) async throws -> DBusValue {
        let reply = try await call("Get", [.string(interface), .string(property)], interface: "org.freedesktop.DBus.Properties")
        guard let value = reply.first?.unwrapped else { throw RigError("Get \(property) returned \(reply)") }
        return value
    }

    func metadata() async throws -> [String: DBusValue] { try await get("Metadata").stringKeyedDictionary ?? [:] }
    func position() async throws -> Int64 { try await get("Position").int64 ?? -1 }

    /// Polls `property` every 20 ms until `condition` holds, at most `timeout`; the last value read.
    @discardableResult
    func waitFor(_ property: String, timeout: Duration = .seconds(10), _ condition: (DBusValue) -> Bool) async throws -> DBusValue {
        let deadline = ContinuousClock.now + timeout
        while true {
            let value = try await get(property)
            if condition(value) || ContinuousClock.now >= deadline { return value }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @discardableResult
    func waitForStatus(_ status: String) async throws -> String? {
        try await waitFor("PlaybackStatus") { $0.string == status }.string
    }

    /// Waits for Position to reach `microseconds` (the pipeline really plays); the last one read.
    @discardableResult
    func waitForPosition(atLeast microseconds: Int64) async throws -> Int64 {
        try await waitFor("Position") { ($0.int64 ?? -1) >= microseconds }.int64 ?? -1
    }

    /// The built `lectern` CLI on the rig's bus.
    func lectern(_ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await Subprocess.run(builtExecutable("lectern").path, arguments, env: environment, timeout: .seconds(20))
    }
}

final class SeekedLog: Sendable {
    let positions = Mutex<[Int64]>([])
}

/// "H:MM:SS.mmm", UPnP's time (RelTime, TrackDuration), in µs.
func upnpTime(_ text: String?) -> Int64? {
    guard let parts = text?.split(separator: ":"), parts.count == 3, let hours = Int64(parts[0]), let minutes = Int64(parts[1]),
          let seconds = Double(parts[2]) else { return nil }
    return (hours * 3600 + minutes * 60) * 1_000_000 + Int64((seconds * 1_000_000).rounded())
}
