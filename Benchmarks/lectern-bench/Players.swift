import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One of the players under test: how to start it and what it is called on the bus.
struct PlayerKind {
    enum Loading {
        /// Started idle; the file is opened with OpenUri (Lectern, VLC).
        case openURI
        /// The file is given on the command line and plays at once (mpv).
        case commandLine
        /// The file is imported into the library (Import, ImportFinished) and played as a book (ActivateBook):
        /// Lectern, so that its position is saved while it plays, as for its users.
        case libraryBook
    }

    /// Where the player sends its audio: a null output paced in real time (the main measurements), or a sound
    /// server (`SoundServer`, the CPU-into-PulseAudio row).
    enum Output {
        case timedNull, pulse
    }

    let label: String
    /// The key of its results in the JSON and of its column in the table (`Report.columns`).
    let key: String
    /// The MPRIS name, or its prefix when the player may add a suffix (mpv's `.instanceN`).
    let namePrefix: String
    let loading: Loading
    /// Started with a HOME of its own (an empty directory), so that no configuration of the user's is read.
    /// Lectern keeps the user's: its GStreamer registry cache is there (warm, as on a desktop).
    var ownHome = false
    /// The command line, with the file to play (nil: start idle) and the output.
    let command: (_ file: URL?, _ output: Output) -> (executable: String, arguments: [String])

    /// `database`: the library lecternd opens (always one of the bench's own: the user's library would make the
    /// figures depend on it, and a lecternd the user runs holds its lock); nil: lecternd's default.
    /// `label` and `key`: another lecternd measured in the same run (`--baseline-lecternd`) has its own.
    static func lectern(executable: String, cacheDirectory: URL, database: URL? = nil, label: String = "Lectern",
                        key: String = "lectern") -> PlayerKind {
        PlayerKind(label: label, key: key, namePrefix: "org.mpris.MediaPlayer2.lectern",
                   loading: .libraryBook) { _, output in
            // Into PulseAudio: the default output (autoaudiosink picks pulsesink), as users run it.
            (executable, (output == .pulse ? [] : ["--audio-sink", "fakesink sync=true"])
                + ["--cache-directory", cacheDirectory.path]
                + (database.map { ["--database", $0.path] } ?? []))
        }
    }

    static func mpv(executable: String, script: String) -> PlayerKind {
        PlayerKind(label: "mpv", key: "mpv", namePrefix: "org.mpris.MediaPlayer2.mpv", loading: .commandLine,
                   ownHome: true) { file, output in
            (executable, ["--idle=yes", "--no-video", output == .pulse ? "--ao=pulse" : "--ao=null", "--no-config",
                          "--script=\(script)", "--no-terminal"]
                + (file.map { [$0.path] } ?? []))
        }
    }

    /// VLC as `cvlc` runs it (the dummy interface), with its built-in MPRIS interface (`--dbus`, on by default in
    /// Debian's build; `--control dbus` would start a second one, on a second connection, under
    /// `org.mpris.MediaPlayer2.vlc.instancePID`), no video, and the `afile` audio output writing the PCM to
    /// /dev/null: paced by VLC's decoder in real time, like `fakesink sync=true` (`adummy` plays in real time too,
    /// but then VLC resamples every buffer with libsamplerate: 1.7 % of a core more here). No configuration file,
    /// no media library; the plugins come from the system's cache (plugins.dat, written at install).
    static func vlc(executable: String) -> PlayerKind {
        PlayerKind(label: "VLC", key: "vlc", namePrefix: "org.mpris.MediaPlayer2.vlc", loading: .openURI,
                   ownHome: true) { _, output in
            (executable, ["-I", "dummy", "--dbus", "--no-one-instance", "--no-video"]
                + (output == .pulse ? ["--aout=pulse"] : ["--aout=afile", "--audiofile-file=/dev/null"])
                + ["--ignore-config", "--no-media-library"])
        }
    }

    /// VLC's launcher (`vlc`, a 14 kB `main` over libvlc) exits at once when geteuid() is 0 ("VLC is not supposed
    /// to be run as root"), and `vlc-wrapper` does not run it as root either: it drops to $SUDO_UID's user, whom
    /// the private bus (the bench's user only) would not let in. So when the bench runs as root, VLC is started
    /// from a copy of the launcher whose one import of `geteuid` is renamed `getppid` (same length, so nothing
    /// else moves): the check then reads the bench's pid. libvlc, libvlccore and the plugins are the system's.
    /// Not root: `executable` itself.
    static func vlcRunnable(_ executable: String, copyInto directory: URL) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchFailure("vlc: no executable at \(executable)")
        }
        guard geteuid() == 0 else { return executable }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: executable))
        let from = Data("geteuid\0".utf8), to = Data("getppid\0".utf8)
        guard let range = bytes.range(of: from), bytes.range(of: from, in: range.upperBound..<bytes.count) == nil else {
            throw BenchFailure("\(executable): no single geteuid import to rename, cannot run it as root")
        }
        bytes.replaceSubrange(range, with: to)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let copy = directory.appendingPathComponent("vlc")
        try bytes.write(to: copy)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy.path)
        return copy.path
    }

    /// The mpv-mpris plugin, wherever the distribution put it (symlinks resolved).
    static func findMPRISPlugin() -> String? {
        let candidates = ["/etc/mpv/scripts/mpris.so", "/usr/lib/mpv-mpris/mpris.so",
                          "/usr/lib/x86_64-linux-gnu/mpv-mpris/mpris.so", "/usr/local/lib/mpv-mpris/mpris.so"]
        for path in candidates where FileManager.default.fileExists(atPath: path) {
            return (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map { link in
                link.hasPrefix("/") ? link : (path as NSString).deletingLastPathComponent + "/" + link
            } ?? path
        }
        return nil
    }
}

/// A started player that owns its MPRIS name.
final class RunningPlayer {
    let kind: PlayerKind
    let process: Subprocess
    let busName: String
    let owner: String
    /// Spawn to NameOwnerChanged, ns.
    let startupNs: UInt64
    let log: URL

    var pid: pid_t { process.pid }

    init(kind: PlayerKind, process: Subprocess, busName: String, owner: String, startupNs: UInt64, log: URL) {
        self.kind = kind
        self.process = process
        self.busName = busName
        self.owner = owner
        self.startupNs = startupNs
        self.log = log
    }

    /// The tail of what the player wrote to stdout/stderr.
    var logTail: String {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return String(text.suffix(2000))
    }

    /// SIGTERM and wait; returns (exit status or nil if it had to be killed, ms to exit).
    func stop() -> (status: Int32?, ms: Double) {
        let start = DispatchTime.now().uptimeNanoseconds
        process.terminate()
        let status = process.waitForExit(timeout: .seconds(10))
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        if status == nil {
            process.kill()
            _ = process.waitForExit(timeout: .seconds(5))
        }
        return (status, ms)
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Starts `kind` on `bus` and times spawn -> NameOwnerChanged for its MPRIS name. `client` must already
/// have the NameOwnerChanged match (see `watchNames`).
func launch(_ kind: PlayerKind, file: URL?, output: PlayerKind.Output = .timedNull, bus: PrivateBus,
            environment: [String: String], client: BusClient, log: URL) throws -> RunningPlayer {
    client.drain()
    let (executable, arguments) = kind.command(file, output)
    let start = DispatchTime.now().uptimeNanoseconds
    let process = try Subprocess(executable, arguments, environment: environment,
                                 stdout: .appendingToFile(log), stderr: .appendingToFile(log))
    var name = "", owner = ""
    let arrived = client.waitFor(timeout: .seconds(15)) { message in
        let reader = MessageReader(message)
        guard reader.isSignal("org.freedesktop.DBus", "NameOwnerChanged") else { return false }
        let args = reader.strings()
        guard args.count == 3, args[0].hasPrefix(kind.namePrefix), !args[2].isEmpty else { return false }
        name = args[0]
        owner = args[2]
        return true
    }
    guard let arrived else {
        let running = process.isRunning
        process.kill()
        _ = process.waitForExit(timeout: .seconds(5))
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        throw BenchFailure("\(kind.label) did not own \(kind.namePrefix)* within 15 s (running: \(running)):\n"
                           + String(text.suffix(2000)))
    }
    // Cross-check with ListNames, as a client looking for the player would.
    let names = try client.listNames()
    guard names.contains(name) else { throw BenchFailure("\(name) announced but not in ListNames: \(names)") }
    return RunningPlayer(kind: kind, process: process, busName: name, owner: owner, startupNs: arrived - start,
                         log: log)
}

func watchNames(_ client: BusClient) throws {
    try client.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                        + "member='NameOwnerChanged',arg0namespace='org.mpris.MediaPlayer2'")
}

/// Polls PlaybackStatus (every 10 ms) until it is `status`; returns whether it got there within `timeout`.
func waitForStatus(_ client: BusClient, _ player: RunningPlayer, _ status: String, timeout: Duration) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if (try? client.getProperty(player.busName, interface: "org.mpris.MediaPlayer2.Player", "PlaybackStatus"))
            == status { return true }
        usleep(10_000)
    }
    return false
}

/// `words` as a shell command line, for the record: those with a space in single quotes.
func shellLine(_ words: [String]) -> String {
    words.map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
}

func sleepFor(_ duration: Duration) {
    let ns = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    var spec = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&spec, &remaining) != 0 && errno == EINTR { spec = remaining }
}
