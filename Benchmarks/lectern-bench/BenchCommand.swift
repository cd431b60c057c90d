import CDBus
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

enum BenchCommand {
    static let usage = """
        usage: lectern-bench [--lecternd PATH] [--mpv PATH] [--mpv-script PATH] [--no-mpv] [--no-concurrency]
                             [--audio FILE.ogg] [--json PATH] [--round-trips N] [--warmup N]
                             [--signal-iterations N] [--startup-runs N]
          --lecternd   the lecternd to measure (a release build; default: next to this tool)
          --audio      the file both players play; generated (about 10 minutes of Vorbis) if it doesn't exist
          --json       also write the results as JSON here
        The Markdown table goes to stdout, progress to stderr. Always exits 0: it is a measurement.

        """

    static func run(_ arguments: [String]) {
        var settings = Settings()
        var lecternd = builtExecutable("lecternd").path
        var mpvPath: String? = Subprocess.findExecutable("mpv")
        var mpvScript: String? = PlayerKind.findMPRISPlugin()
        var skipMPV = false
        var audioPath: String?
        var jsonPath: String?

        if arguments.count == 3, arguments[1] == "--serve-echo" { EchoResponder.serve(address: arguments[2]) }
        var args = arguments.dropFirst().makeIterator()
        func value(_ flag: String) -> String {
            guard let v = args.next() else {
                FileHandle.standardError.write(Data("\(flag) needs a value\n\(usage)".utf8))
                exit(0)
            }
            return v
        }
        func int(_ flag: String) -> Int {
            let text = value(flag)
            guard let n = Int(text), n >= 0 else {
                FileHandle.standardError.write(Data("\(flag): not a count: \(text)\n".utf8))
                exit(0)
            }
            return n
        }
        while let arg = args.next() {
            switch arg {
            case "--lecternd": lecternd = value(arg)
            case "--mpv": mpvPath = value(arg)
            case "--mpv-script": mpvScript = value(arg)
            case "--no-mpv": skipMPV = true
            case "--no-concurrency": settings.concurrency = []
            case "--audio": audioPath = value(arg)
            case "--json": jsonPath = value(arg)
            case "--round-trips": settings.roundTrips = max(1, int(arg))
            case "--warmup": settings.warmup = int(arg)
            case "--signal-iterations": settings.signalIterations = max(2, int(arg) / 2 * 2)
            case "--startup-runs": settings.startupRuns = max(1, int(arg))
            case "-h", "--help":
                print(usage)
                return
            default:
                FileHandle.standardError.write(Data("unknown argument \(arg)\n\(usage)".utf8))
                return
            }
        }

        _ = dbus_threads_init_default()
        var notes: [String] = []
        let work: TemporaryDirectory
        do { work = try TemporaryDirectory(prefix: "lectern-bench") } catch {
            print("cannot create a temporary directory: \(error)")
            return
        }

        // The audio file both players play.
        let audio = URL(fileURLWithPath: audioPath ?? work.appending("long.ogg").path)
        if !FileManager.default.fileExists(atPath: audio.path) {
            progress("generating \(audio.path) (26000 buffers ≈ 10 min of Vorbis)")
            do {
                try FileManager.default.createDirectory(at: audio.deletingLastPathComponent(),
                                                        withIntermediateDirectories: true)
                let partial = audio.deletingLastPathComponent().appendingPathComponent(".partial-" + audio.lastPathComponent)
                try AudioFiles.gst("audiotestsrc num-buffers=26000 ! audioconvert ! vorbisenc ! oggmux"
                                   + " ! filesink location=\(partial.path)")
                try FileManager.default.moveItem(at: partial, to: audio)
            } catch {
                print("cannot generate the audio file: \(error)")
                return
            }
        }

        // GStreamer alone, for reference.
        progress("gst-launch-1.0 playbin alone: memory and CPU")
        let reference = measurePipelineReference(audio: audio, settings: settings,
                                                 log: work.appending("gst-launch.log"))
        if reference == nil { notes.append("gst-launch-1.0 reference: could not be measured") }

        // Lectern.
        var lecternResult: PlayerResult?
        if FileManager.default.isExecutableFile(atPath: lecternd) {
            let cache = work.appending("lectern-cache")
            try? FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
            do {
                lecternResult = try measure(.lectern(executable: lecternd, cacheDirectory: cache), audio: audio,
                                            settings: settings, work: work, environment: [:])
            } catch {
                notes.append("Lectern: measurement failed: \(error)")
            }
        } else {
            notes.append("Lectern: no executable at \(lecternd)")
        }

        // mpv + mpv-mpris.
        var mpvResult: PlayerResult?
        if skipMPV {
            notes.append("mpv: skipped (--no-mpv)")
        } else if let mpvPath, let mpvScript, FileManager.default.fileExists(atPath: mpvScript) {
            let home = work.appending("mpv-home")
            try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            do {
                mpvResult = try measure(.mpv(executable: mpvPath, script: mpvScript), audio: audio, settings: settings,
                                        work: work, environment: ["HOME": home.path])
            } catch {
                notes.append("mpv: measurement failed: \(error)")
            }
        } else {
            notes.append("mpv: not measured (mpv: \(mpvPath ?? "not found"), mpv-mpris plugin: \(mpvScript ?? "not found"))")
        }

        let report = Report(lectern: lecternResult, mpv: mpvResult, reference: reference, settings: settings)
        let environment = describeEnvironment(lecternd: lecternd, mpv: mpvPath, script: mpvScript, audio: audio)
        print("")
        for key in environment.keys.sorted() { print("- \(key): \(environment[key]!)") }
        print("")
        print(report.markdown)
        for note in notes + (lecternResult?.notes ?? []) + (mpvResult?.notes ?? []) { print("Note: \(note)") }
        if let jsonPath {
            do {
                try report.jsonData(environment: environment).write(to: URL(fileURLWithPath: jsonPath))
                progress("JSON written to \(jsonPath)")
            } catch {
                print("Note: cannot write \(jsonPath): \(error)")
            }
        }
    }

    static func describeEnvironment(lecternd: String, mpv: String?, script: String?, audio: URL) -> [String: String] {
        func firstLine(_ tool: String, _ args: [String]) -> String {
            guard let r = try? Subprocess.run(tool, args, timeout: .seconds(10)) else { return "?" }
            return (r.stdout + r.stderr).split(separator: "\n").first.map(String.init) ?? "?"
        }
        var u = utsname()
        uname(&u)
        let kernel = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let date = ISO8601DateFormatter().string(from: Date())
        return [
            "date": date,
            "cpus": "\(ProcessInfo.processInfo.activeProcessorCount) online",
            "kernel": kernel,
            "lecternd": lecternd,
            "mpv": mpv.map { _ in firstLine("mpv", ["--version"]) } ?? "not found",
            "mpv-mpris": script ?? "not found",
            "dbus-daemon": firstLine("dbus-daemon", ["--version"]),
            "audio": audio.path,
        ]
    }
}
