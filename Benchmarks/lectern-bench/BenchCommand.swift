import CDBus
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

enum BenchCommand {
    static let usage = """
        usage: lectern-bench [--lecternd PATH] [--baseline-lecternd PATH] [--mpv PATH] [--mpv-script PATH] [--no-mpv] [--vlc PATH] [--no-vlc]
                             [--no-concurrency] [--audio FILE.ogg] [--json PATH] [--round-trips N] [--warmup N]
                             [--signal-iterations N] [--startup-runs N] [--wait-for-quiet SECONDS]
                             [--no-renice] [--no-sound-server] [--library | --library-only] [--library-calls N]
                             [--library-books N] [--import-files N] [--import-id3v1] [--import-only]
                             [--import-shape-files N]
                             [--library-waits] [--library-listers N]
          --lecternd   the lecternd to measure (a release build; default: next to this tool)
          --baseline-lecternd  another lecternd (e.g. an earlier commit's) measured in the same run, in a column
                       of its own after Lectern's
          --mpv, --mpv-script, --vlc  the reference players (default: mpv, the mpv-mpris plugin and vlc where
                       Debian puts them); --no-mpv, --no-vlc: measure without them
          --audio      the file the players play; generated (about 10 minutes of Vorbis) if it doesn't exist
          --json       also write the results as JSON here
          --wait-for-quiet  wait up to this long (default 180 s; 0: don't) for the machine to be idle first
          --no-renice  don't run at nice -20 (by default this tool, and so the bus, the players and the threads it
                       starts, which inherit it, run at nice -20 when allowed, to shield them from other work)
          --no-sound-server  skip the CPU of playing into a headless PulseAudio (null sink) of the tool's own
          --library    also run the library benchmarks (Lectern alone): import rate, and calls on a big library
          --library-only  only the library benchmarks (no player comparison)
          --library-calls N  timed calls per library series (default 200, after 20 warm-up calls)
          --library-books N  books in the big library (default 10000, 10 files each, on 100 shelves)
          --import-files N   files generated for the import benchmark (default 1000, in 50 folders)
          --import-id3v1  the import's files tagged in ID3v1 alone (older rips), not ID3v2
          --import-only  only the import benchmark (no player comparison, no big library)
          --import-shape-files N  files imported as one-file books and as books of 20 files, each into a fresh
                       database (default 10000; 0: none)
          --library-waits  only how long method calls (PlayPause, ListShelves, GetBook) wait: during the import, and
                       on the big library while other clients list in a loop (no player comparison, no series of
                       each call alone)
          --library-listers N  the clients that list in a loop while calls are timed (default 4)
        The Markdown table goes to stdout, progress to stderr. Always exits 0: it is a measurement.

        """

    static func run(_ arguments: [String]) {
        var settings = Settings()
        var lecternd = builtExecutable("lecternd").path
        var baselineLecternd: String?
        var mpvPath: String? = Subprocess.findExecutable("mpv")
        var mpvScript: String? = PlayerKind.findMPRISPlugin()
        var skipMPV = false
        var vlcPath: String? = Subprocess.findExecutable("vlc")
        var skipVLC = false
        var skipSoundServer = false
        var audioPath: String?
        var jsonPath: String?
        var quietLimit: Duration = .seconds(180)
        var nice: Int32? = -20
        var library: (run: Bool, only: Bool) = (false, false)
        var librarySettings = LibrarySettings()

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
            case "--baseline-lecternd": baselineLecternd = value(arg)
            case "--mpv": mpvPath = value(arg)
            case "--mpv-script": mpvScript = value(arg)
            case "--no-mpv": skipMPV = true
            case "--vlc": vlcPath = value(arg)
            case "--no-vlc": skipVLC = true
            case "--no-concurrency": settings.concurrency = []
            case "--no-sound-server": skipSoundServer = true
            case "--audio": audioPath = value(arg)
            case "--json": jsonPath = value(arg)
            case "--wait-for-quiet": quietLimit = .seconds(int(arg))
            case "--no-renice": nice = nil
            case "--library": library.run = true
            case "--library-only": library = (true, true)
            case "--library-calls": librarySettings.calls = max(1, int(arg))
            case "--library-books": librarySettings.books = max(100, int(arg))
            case "--import-files": librarySettings.importFiles = max(1, int(arg))
            case "--import-id3v1": librarySettings.importID3v1 = true
            case "--import-shape-files": librarySettings.shapeFiles = max(0, int(arg))
            case "--library-waits":
                library = (true, true)
                librarySettings.waitsOnly = true
            case "--library-listers": librarySettings.listers = max(1, int(arg))
            case "--import-only":
                library = (true, true)
                librarySettings.bigLibrary = false
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

        // Before any thread or child exists, so that all of them inherit it (Linux nice is per thread).
        var machine: [String: String] = [:]
        if let nice {
            errno = 0
            let done = setpriority(__priority_which_t(0), 0, nice) == 0  // PRIO_PROCESS, this thread
            machine["nice"] = done ? "\(nice) (tool, bus, players, reference)" : "0 (setpriority failed: errno \(errno))"
        } else {
            machine["nice"] = "not changed (--no-renice)"
        }
        _ = dbus_threads_init_default()
        var notes: [String] = []
        let work: TemporaryDirectory
        do { work = try TemporaryDirectory(prefix: "lectern-bench") } catch {
            print("cannot create a temporary directory: \(error)")
            return
        }

        // The audio file the players play.
        let audio = URL(fileURLWithPath: audioPath ?? work.appending("long.ogg").path)
        if !library.only, !FileManager.default.fileExists(atPath: audio.path) {
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

        // Other work on the machine skews everything: wait for it to be quiet, and record how busy it was.
        if quietLimit > .zero {
            progress("waiting up to \(quietLimit) for the machine to be quiet (all CPUs < 15 % busy for 3 s)")
            let (busy, quiet) = MachineCPU.waitUntilQuiet(limit: quietLimit)
            machine["quiet at start"] = quiet ? "yes" : String(format: "NO: still %.0f %% busy after waiting", busy)
            if !quiet { notes.append("the machine was busy when the run started (other processes): figures are skewed") }
        }
        machine["load average at start"] = MachineCPU.loadAverage
        let machineStart = MachineCPU()

        if library.only {
            runLibraryOnly(lecternd: lecternd, settings: librarySettings, work: work, machine: machine,
                           machineStart: machineStart, notes: notes, jsonPath: jsonPath)
            return
        }

        if !skipSoundServer {
            do { settings.soundServer = try SoundServer() } catch {
                notes.append("CPU into PulseAudio: not measured (\(error))")
            }
        }
        defer { settings.soundServer?.stop() }

        // GStreamer alone, for reference.
        progress("gst-launch-1.0 playbin alone: memory and CPU")
        let reference = measurePipelineReference(audio: audio, settings: settings,
                                                 log: work.appending("gst-launch.log"))
        if reference == nil { notes.append("gst-launch-1.0 reference: could not be measured") }

        // Lectern, then the reference players, each optional: mpv + mpv-mpris, VLC.
        let cache = work.appending("lectern-cache")
        try? FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        let lectern: Result<PlayerKind, BenchFailure> = FileManager.default.isExecutableFile(atPath: lecternd)
            ? .success(.lectern(executable: lecternd, cacheDirectory: cache,
                                database: work.appending("lectern-library/library.sqlite")))
            : .failure(BenchFailure("Lectern: no executable at \(lecternd)"))
        var baseline: [Result<PlayerKind, BenchFailure>] = []
        if let baselineLecternd {
            let cache = work.appending("lectern-baseline-cache")
            try? FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
            baseline.append(FileManager.default.isExecutableFile(atPath: baselineLecternd)
                ? .success(.lectern(executable: baselineLecternd, cacheDirectory: cache,
                                    database: work.appending("lectern-baseline-library/library.sqlite"),
                                    label: "Lectern (baseline)", key: "lectern-baseline"))
                : .failure(BenchFailure("Lectern (baseline): no executable at \(baselineLecternd)")))
        }
        let mpv: Result<PlayerKind, BenchFailure>
        if skipMPV {
            mpv = .failure(BenchFailure("mpv: skipped (--no-mpv)"))
        } else if let mpvPath, let mpvScript, FileManager.default.fileExists(atPath: mpvScript) {
            mpv = .success(.mpv(executable: mpvPath, script: mpvScript))
        } else {
            mpv = .failure(BenchFailure("mpv: not measured (mpv: \(mpvPath ?? "not found"), mpv-mpris plugin: "
                                        + "\(mpvScript ?? "not found"))"))
        }
        var vlcRunnable: String?
        let vlc: Result<PlayerKind, BenchFailure>
        if skipVLC {
            vlc = .failure(BenchFailure("VLC: skipped (--no-vlc)"))
        } else if let vlcPath {
            do {
                let runnable = try PlayerKind.vlcRunnable(vlcPath, copyInto: work.appending("vlc-launcher"))
                vlcRunnable = runnable
                vlc = .success(.vlc(executable: runnable))
            } catch {
                vlc = .failure(BenchFailure("VLC: not measured (\(error))"))
            }
        } else {
            vlc = .failure(BenchFailure("VLC: not measured (vlc: not found)"))
        }
        var results: [String: PlayerResult] = [:]
        for candidate in [lectern] + baseline + [mpv, vlc] {
            switch candidate {
            case .success(let kind):
                do {
                    var result = try measure(kind, audio: audio, settings: settings, work: work)
                    if let server = settings.soundServer {
                        do {
                            result.intoSoundServer = try measureIntoSoundServer(kind, server: server, audio: audio, settings: settings,
                                                                                work: work, withSettings: kind.key == "lectern")
                        } catch {
                            notes.append("\(kind.label): CPU into PulseAudio not measured: \(error)")
                        }
                    }
                    results[kind.key] = result
                } catch {
                    notes.append("\(kind.label): measurement failed: \(error)")
                }
            case .failure(let reason):
                notes.append(reason.description)
            }
        }

        let busy = MachineCPU().busyPercent(since: machineStart)
        machine["all-CPU busy during the run (this tool, the players, dbus-daemon and anything else)"]
            = String(format: "%.1f %%", busy)
        machine["load average at end"] = MachineCPU.loadAverage
        let report = Report(results: results, reference: reference, settings: settings)
        var environment = describeEnvironment(lecternd: lecternd, mpv: mpvPath, script: mpvScript, vlc: vlcPath,
                                              vlcRunnable: vlcRunnable, audio: audio)
        environment.merge(machine) { _, new in new }
        if let baselineLecternd { environment["lecternd (baseline)"] = baselineLecternd }
        print("")
        for key in environment.keys.sorted() { print("- \(key): \(environment[key]!)") }
        print("")
        print(report.markdown)
        for note in notes + report.columns.flatMap({ results[$0.key]?.notes ?? [] }) { print("Note: \(note)") }
        var libraryJSON: [String: Any]?
        if library.run {
            let result = libraryRun(lecternd: lecternd, settings: librarySettings, work: work)
            print("")
            print(LibraryReport.markdown(result, settings: librarySettings))
            libraryJSON = LibraryReport.json(result)
        }
        if let jsonPath {
            do {
                try report.jsonData(environment: environment, library: libraryJSON).write(to: URL(fileURLWithPath: jsonPath))
                progress("JSON written to \(jsonPath)")
            } catch {
                print("Note: cannot write \(jsonPath): \(error)")
            }
        }
    }

    static func libraryRun(lecternd: String, settings: LibrarySettings, work: TemporaryDirectory) -> LibraryResult {
        guard FileManager.default.isExecutableFile(atPath: lecternd) else {
            return LibraryResult(notes: ["library: no lecternd at \(lecternd)"])
        }
        return measureLibrary(lecternd: lecternd, settings: settings, work: work)
    }

    /// `--library-only`: the library section alone, with the same description of the machine.
    static func runLibraryOnly(lecternd: String, settings: LibrarySettings, work: TemporaryDirectory,
                               machine: [String: String], machineStart: MachineCPU, notes: [String], jsonPath: String?) {
        let result = libraryRun(lecternd: lecternd, settings: settings, work: work)
        var environment = machine
        environment["all-CPU busy during the run (this tool, lecternd, dbus-daemon and anything else)"]
            = String(format: "%.1f %%", MachineCPU().busyPercent(since: machineStart))
        environment["load average at end"] = MachineCPU.loadAverage
        environment["date"] = ISO8601DateFormatter().string(from: Date())
        environment["cpus"] = "\(ProcessInfo.processInfo.activeProcessorCount) online"
        environment["lecternd"] = lecternd
        print("")
        for key in environment.keys.sorted() { print("- \(key): \(environment[key]!)") }
        print("")
        print(LibraryReport.markdown(result, settings: settings))
        for note in notes { print("Note: \(note)") }
        if let jsonPath {
            let root: [String: Any] = ["environment": environment, "library": LibraryReport.json(result)]
            do {
                try JSONSerialization.data(withJSONObject: Report.sanitized(root), options: [.prettyPrinted, .sortedKeys])
                    .write(to: URL(fileURLWithPath: jsonPath))
                progress("JSON written to \(jsonPath)")
            } catch {
                print("Note: cannot write \(jsonPath): \(error)")
            }
        }
    }

    static func describeEnvironment(lecternd: String, mpv: String?, script: String?, vlc: String?, vlcRunnable: String?,
                                    audio: URL) -> [String: String] {
        func firstLine(_ tool: String, _ args: [String]) -> String {
            guard let r = try? Subprocess.run(tool, args, timeout: .seconds(10)) else { return "?" }
            return (r.stdout + r.stderr).split(separator: "\n").first.map(String.init) ?? "?"
        }
        var u = utsname()
        uname(&u)
        let kernel = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let date = ISO8601DateFormatter().string(from: Date())
        let asRoot = vlcRunnable == vlc ? "" : ", run as root from a copy of its launcher with the root check off"
        return [
            "date": date,
            "cpus": "\(ProcessInfo.processInfo.activeProcessorCount) online",
            "kernel": kernel,
            "lecternd": lecternd,
            "mpv": mpv.map { _ in firstLine("mpv", ["--version"]) } ?? "not found",
            "mpv-mpris": script ?? "not found",
            "vlc": vlcRunnable.map { firstLine($0, ["--version"]) + " (\(vlc ?? "?")\(asRoot))" } ?? vlc ?? "not found",
            "dbus-daemon": firstLine("dbus-daemon", ["--version"]),
            "audio": audio.path,
        ]
    }
}
