import DBus
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Reliability {
    /// The daemon and its bus stopped together, as at a logout (SIGTERM to the whole session at once), while a client
    /// calls: the daemon always ends, within its shutdown deadline, and the book keeps its place.
    @Suite struct Stopping {
        /// lecternd's shutdown deadline (`Shutdown.deadline`): after it, the daemon exits anyway.
        static let deadline: Duration = .seconds(5)
        /// The exit status of a shutdown ended by its deadline (`Shutdown.deadlineStatus`).
        static let deadlineStatus: Int32 = 1
        /// No smart rewind: each round's Play resumes exactly where the last round stopped.
        static let arguments = ["--smart-rewind", "off"]

        /// In which order the daemon and its bus are stopped.
        enum Ending: CaseIterable, CustomStringConvertible {
            /// SIGTERM to the daemon, then to the bus.
            case daemonThenBus
            /// SIGTERM to the bus, then to the daemon.
            case busThenDaemon
            /// SIGTERM to both, back to back.
            case together
            /// SIGKILL to the bus; the daemon is not signalled.
            case busKilled

            var description: String {
                switch self {
                case .daemonThenBus: "SIGTERM to the daemon, then the bus"
                case .busThenDaemon: "SIGTERM to the bus, then the daemon"
                case .together: "SIGTERM to both at once"
                case .busKilled: "SIGKILL to the bus"
                }
            }

            /// Stops `daemon` and `bus` in this order, `gap` apart.
            func apply(daemon: Subprocess, bus: pid_t, gap: Duration) async throws {
                switch self {
                case .daemonThenBus:
                    daemon.signal(SIGTERM)
                    try await Task.sleep(for: gap)
                    kill(bus, SIGTERM)
                case .busThenDaemon:
                    kill(bus, SIGTERM)
                    try await Task.sleep(for: gap)
                    daemon.signal(SIGTERM)
                case .together:
                    kill(bus, SIGTERM)
                    daemon.signal(SIGTERM)
                case .busKilled:
                    kill(bus, SIGKILL)
                }
            }
        }

        /// A client calling the daemon without pause: where the book is (Metadata and Position), PlayPause, and a Seek
        /// of 0.3 s forward or back in turn (they cancel out: however many land after its last look, the place moves by
        /// 0.3 s at most). It stops at its first error: the daemon or the bus is gone.
        final class Flood: Sendable {
            /// Each look at the book: when its answer came, and the place (µs from the start of the book).
            private let looks = Mutex<[(at: ContinuousClock.Instant, place: Int64)]>([])
            private let calls = Mutex(0)
            private let ended = Mutex(false)

            /// Calls until one fails.
            func run(_ rig: Rig) async {
                defer { ended.withLock { $0 = true } }
                var forward = true
                while true {
                    do {
                        let place = try await CrashResume.bookPosition(rig)
                        looks.withLock { $0.append((ContinuousClock.now, place)) }
                        try await rig.mpris("PlayPause")
                        try await rig.mpris("Seek", [.int64(forward ? 300_000 : -300_000)])
                        forward.toggle()
                        calls.withLock { $0 += 5 }
                    } catch {
                        return
                    }
                }
            }

            /// The place of the last look answered before `instant`.
            func lastPlace(before instant: ContinuousClock.Instant) -> Int64? {
                looks.withLock { $0.last { $0.at < instant }?.place }
            }

            var callCount: Int { calls.withLock { $0 } }

            /// Whether its last call ended (with the error that stopped it) within `limit`: a call still waiting
            /// for good after its bus went away would be a client call whose continuation leaked.
            func end(within limit: Duration) async throws -> Bool {
                try await poll(timeout: limit, { self.ended.withLock { $0 } }, until: { $0 })
            }
        }

        /// The book's saved place, read from the database file: the files before the saved one plus its offset, in µs.
        static func savedPlace(_ database: String, book: Int64) async throws -> Int64 {
            let script = """
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1])
                row = c.execute("SELECT f.path, b.positionOffset FROM book b JOIN bookFile f ON f.id = b.positionFileId "
                                "WHERE b.id = ?", (int(sys.argv[2]),)).fetchone()
                print(row[0] if row else "")
                print(row[1] if row else -1)
                """
            let result = try await Subprocess.run("python3", ["-c", script, database, "\(book)"], timeout: .seconds(20))
            let lines = result.stdout.split(separator: "\n").map(String.init)
            guard result.status == 0, lines.count == 2, let offset = Int64(lines[1]), offset >= 0,
                  let index = ReliabilityMedia.bookFiles.firstIndex(where: { lines[0].hasSuffix("/book/\($0)") }) else {
                throw RigError("cannot read the saved place of book \(book): \(result.stdout) \(result.stderr)")
            }
            return Int64(index) * CrashResume.fileDuration.microsecondsValue + offset
        }

        /// Waits for the daemon to exit, at most the deadline and a margin; its exit status, or nil.
        static func exitStatus(_ daemon: Subprocess) async -> Int32? {
            await daemon.waitForExit(timeout: deadline + .seconds(2))
        }

        @Test func stoppedWithItsBusInAnyOrderDuringCallsTheDaemonEndsWithinItsDeadlineAndKeepsThePlace() async throws {
            let rounds = Profile.current.stops
            let seed = SeededGenerator.seed()
            var random = SeededGenerator(seed: seed)
            let library = try TemporaryDirectory(prefix: "lectern-stop")
            defer { library.remove() }
            let database = library.appending("library.sqlite").path
            var book: Int64 = 0
            var errors: [Int64] = []
            var calls = 0
            var longest = Duration.zero
            for round in 1...rounds {
                let ending = Ending.allCases[(round - 1) % Ending.allCases.count]
                let calling = Duration.milliseconds(Int.random(in: 100...1_200, using: &random))
                let gap = Duration.milliseconds(Int.random(in: 0...150, using: &random))
                let label = "round \(round) (seed \(seed)), \(ending), \(gap) apart, after \(calling) of calls"
                try await Rig.with(databasePath: database) { rig in
                    if round == 1 {
                        try await rig.start(arguments: Self.arguments)
                        book = try await rig.importBook(try await ReliabilityMedia.shared().book)
                        try await rig.lectern("ActivateBook", [.int64(book), .boolean(true)])
                    } else {
                        _ = try await CrashResume.restart(rig, book: book, arguments: Self.arguments)
                        try await rig.mpris("Play")
                    }
                    let status = try await rig.poll({ try await rig.status() }, until: { $0 == "Playing" })
                    try #require(status == "Playing", "\(label): not playing")
                    // Inside the first file, away from both of its ends.
                    let place = try await CrashResume.bookPosition(rig)
                    if !(5_000_000...30_000_000).contains(place) { try await rig.mpris("Seek", [.int64(15_000_000 - place)]) }
                    guard let daemon = rig.daemon else { throw RigError("no daemon") }

                    let flood = Flood()
                    Task { await flood.run(rig) }
                    try await Task.sleep(for: calling)
                    let stopped = ContinuousClock.now
                    try await ending.apply(daemon: daemon, bus: rig.bus.pid, gap: gap)
                    let exit = await Self.exitStatus(daemon)
                    let took = ContinuousClock.now - stopped
                    let clientEnded = try await flood.end(within: .seconds(10))
                    #expect(clientEnded, "\(label): the client's last call never ended, though its bus is gone")
                    calls += flood.callCount
                    longest = max(longest, took)

                    guard let exit else {
                        let stacks = await daemon.threadStacks()
                        Issue.record("\(label): still running \(took) after:\n\(rig.daemonLog.suffix(3_000))\nIts threads:\n\(stacks)")
                        return
                    }
                    // 0: it stopped by itself, not by its deadline.
                    #expect(exit == 0, "\(label): \(daemon.termination.map { "\($0)" } ?? "?") after \(took)\n\(rig.daemonLog.suffix(3_000))")
                    #expect(!rig.daemonLog.contains("CONTINUATION MISUSE"), "\(label):\n\(rig.daemonLog.suffix(3_000))")
                    let lastSeen = try #require(flood.lastPlace(before: stopped), "\(label): the client never saw the book")
                    let saved = try await Self.savedPlace(database, book: book)
                    errors.append(saved - lastSeen)
                    #expect(abs(saved - lastSeen) <= 1_000_000, "\(label): last seen at \(lastSeen) µs, saved at \(saved) µs")
                }
            }
            let worst = errors.map(abs).max() ?? 0
            Figures.record("stop with the bus", "rounds", "\(rounds) (\(calls) calls)")
            Figures.record("stop with the bus", "longest exit", Figures.ms(longest))
            Figures.record("stop with the bus", "place error max", String(format: "%.3f s", Double(worst) / 1e6))
        }

        /// Starts the book playing, lets it play, and freezes the bus (SIGSTOP): from then on nothing on the bus answers.
        /// The place a client saw just before.
        static func playThenFreezeTheBus(_ rig: Rig) async throws -> (book: Int64, seen: Int64) {
            let book = try await CrashResume.startBook(rig)
            try await Task.sleep(for: .milliseconds(500))
            let seen = try await CrashResume.bookPosition(rig)
            kill(rig.bus.pid, SIGSTOP)
            return (book, seen)
        }

        /// A bus that stops answering holds the shutdown (giving the names back waits for its replies): the daemon exits
        /// at its deadline anyway, says what was still running, and has saved the place first.
        @Test func aBusThatStopsAnsweringCannotKeepTheDaemonPastItsDeadline() async throws {
            try await Rig.with { rig in
                let (book, seen) = try await Self.playThenFreezeTheBus(rig)
                defer { kill(rig.bus.pid, SIGCONT) }
                let daemon = try #require(rig.daemon)
                daemon.signal(SIGTERM)
                let exit = await Self.exitStatus(daemon)
                #expect(exit == Self.deadlineStatus, "\(daemon.termination.map { "\($0)" } ?? "still running"):\n\(rig.daemonLog)")
                #expect(rig.daemonLog.contains("shutdown did not finish within"), "\(rig.daemonLog)")
                #expect(rig.daemonLog.contains("giving the bus names back"), "the deadline's line does not say what ran:\n\(rig.daemonLog)")
                let saved = try await Self.savedPlace(rig.databasePath, book: book)
                #expect(abs(saved - seen) <= 1_000_000, "last seen at \(seen) µs, saved at \(saved) µs")
            }
        }

        /// A clean stop closes the library: no -wal or -shm file is left beside it (SQLite removes them with the last
        /// connection), and the place is in the database file itself.
        @Test func aCleanStopLeavesTheLibraryClosed() async throws {
            try await Rig.with { rig in
                let book = try await CrashResume.startBook(rig)
                try await Task.sleep(for: .milliseconds(500))
                let seen = try await CrashResume.bookPosition(rig)
                let fm = FileManager.default
                #expect(fm.fileExists(atPath: rig.databasePath + "-wal"), "while running, SQLite's log is beside the library")
                #expect(try await rig.stop() == 0, "\(rig.daemonLog)")
                let folder = (try? fm.contentsOfDirectory(atPath: (rig.databasePath as NSString).deletingLastPathComponent)) ?? []
                #expect(!fm.fileExists(atPath: rig.databasePath + "-wal") && !fm.fileExists(atPath: rig.databasePath + "-shm"),
                        "\(folder)\n\(rig.daemonLog)")
                let saved = try await Self.savedPlace(rig.databasePath, book: book)
                #expect(abs(saved - seen) <= 1_000_000, "last seen at \(seen) µs, saved at \(saved) µs")
            }
        }

        /// A second SIGTERM while the daemon stops (here held by a frozen bus) ends it at once, before its deadline; the
        /// place was saved by then.
        @Test func aSecondSignalDuringTheShutdownEndsTheDaemonAtOnce() async throws {
            try await Rig.with { rig in
                let (book, seen) = try await Self.playThenFreezeTheBus(rig)
                defer { kill(rig.bus.pid, SIGCONT) }
                let daemon = try #require(rig.daemon)
                daemon.signal(SIGTERM)
                let stopping = try await rig.poll({ rig.daemonLog }, until: { $0.contains("lecternd stopping") })
                try #require(stopping.contains("lecternd stopping"), "\(stopping)")
                // Past the save (milliseconds), into the wait for the frozen bus.
                try await Task.sleep(for: .milliseconds(300))
                daemon.signal(SIGTERM)
                let exit = await Self.exitStatus(daemon)
                // 128 + SIGTERM: the second signal ended it; the deadline's exit would be 1.
                #expect(exit == 128 + SIGTERM, "\(daemon.termination.map { "\($0)" } ?? "still running"):\n\(rig.daemonLog)")
                let saved = try await Self.savedPlace(rig.databasePath, book: book)
                #expect(abs(saved - seen) <= 1_000_000, "last seen at \(seen) µs, saved at \(saved) µs")
            }
        }
    }
}
