import DBus
import Foundation
import Testing
import TestSupport

extension Reliability {
    /// A second lecternd on the same database, on the same bus or another one, refuses to start and touches
    /// neither the first one nor the database. (IntegrationTests.Lifecycle checks the exit status and message with
    /// the default database.)
    @Suite struct SecondInstance {
        /// The bytes of the database and its WAL.
        static func databaseFiles(_ rig: Rig) -> [String: Data] {
            var out: [String: Data] = [:]
            for suffix in ["", "-wal", "-shm"] {
                out[suffix] = FileManager.default.contents(atPath: rig.databasePath + suffix)
            }
            return out
        }

        /// Runs another lecternd on the rig's library (behind `wrapper`, with `extra` arguments) until it exits, 10 s
        /// at most: its exit status (nil: it was still running, and was killed) and what it wrote to stderr.
        static func runSecond(_ rig: Rig, _ extra: [String] = [], environment: [String: String],
                              wrapper: [String] = []) async throws -> (status: Int32?, stderr: String) {
            let command = wrapper + [builtExecutable("lecternd").path] + rig.daemonArguments + extra
            let second = try Subprocess(command[0], Array(command.dropFirst()), environment: environment,
                                        stdout: .pipe, stderr: .pipe)
            let status = await second.waitForExit(timeout: .seconds(10))
            if status == nil {
                second.kill()
                _ = await second.waitForExit(timeout: .seconds(5))
            }
            return (status, await second.readAll(.stderr, timeout: .seconds(2)))
        }

        /// The rig's environment with another bus as the session bus.
        static func environment(_ rig: Rig, sessionBus bus: PrivateBus) -> [String: String] {
            var environment = rig.environment
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            environment["XDG_RUNTIME_DIR"] = bus.runtimeDirectory.path
            return environment
        }

        /// Starts the first daemon and plays the suite's book from its start: the daemon and the book.
        static func startPlaying(_ rig: Rig) async throws -> (Subprocess, Int64) {
            let first = try await rig.start()
            let book = try await rig.importBook(try await ReliabilityMedia.shared().book)
            try await rig.lectern("ActivateBook", [.int64(book), .boolean(true)])
            _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Playing" })
            return (first, book)
        }

        @Test func aSecondDaemonRefusesToStartAndLeavesTheFirstAndItsDatabaseUntouched() async throws {
            try await Rig.with { rig in
                let (first, book) = try await Self.startPlaying(rig)
                try await rig.mpris("Pause")
                _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Paused" })
                try await Task.sleep(for: .milliseconds(300))  // the pause's save is written
                let files = Self.databaseFiles(rig)
                let position = try await rig.position()

                let (status, stderr) = try await Self.runSecond(rig, environment: rig.environment)
                #expect(status == 2, "second lecternd: exit status \(status.map { "\($0)" } ?? "none, still running"); stderr:\n\(stderr)")
                #expect(stderr.contains("already running"), "stderr:\n\(stderr)")

                #expect(first.isRunning)
                #expect(Self.databaseFiles(rig) == files, "the second lecternd changed the database files")
                #expect(try await rig.integrityCheck() == "ok")
                #expect(try await rig.status() == "Paused")
                #expect(try await rig.position() == position)
                #expect(try await rig.currentBook() == book)
                try await rig.mpris("Play")
                #expect(try await rig.poll({ try await rig.status() }, until: { $0 == "Playing" }) == "Playing")
                Figures.record("second instance", "exit status", status.map { "\($0)" } ?? "did not exit")
                #expect(try await rig.stop() == 0)
            }
        }

        /// The bus name can't see a second lecternd on another bus (another session, `--bus-address`) pointed at the
        /// same library: the library's lock does. Made while the first one plays.
        @Test func aSecondDaemonOnAnotherBusWithTheSameLibraryRefusesAndTheFirstPlaysOn() async throws {
            try await Rig.with { rig in
                let (first, book) = try await Self.startPlaying(rig)

                let otherBus = try PrivateBus()
                defer { otherBus.stop() }
                let otherClient = try BusConnection(address: otherBus.address)
                defer { otherClient.close() }
                let environment = Self.environment(rig, sessionBus: otherBus)
                var statuses: [String] = []
                // Another session bus, then the same bus chosen with --bus-address.
                for extra in [[], ["--bus-address", otherBus.address]] {
                    let before = try await rig.position()
                    let (status, stderr) = try await Self.runSecond(rig, extra, environment: environment)
                    statuses.append(status.map { "\($0)" } ?? "did not exit")
                    #expect(status == 2, "second lecternd \(extra): exit status \(status.map { "\($0)" } ?? "none, still running"); stderr:\n\(stderr)")
                    // Which library, and who holds it.
                    #expect(stderr.contains("already running") && stderr.contains("library.sqlite") && stderr.contains("pid \(first.pid)"),
                            "stderr:\n\(stderr)")
                    let owned = try await otherClient.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                           interface: "org.freedesktop.DBus", member: "NameHasOwner",
                                                           [.string(Names.lectern)]).first?.bool
                    #expect(owned == false, "a lecternd owns \(Names.lectern) on the other bus")

                    // The first plays on and answers.
                    #expect(first.isRunning)
                    #expect(try await rig.status() == "Playing")
                    let moved = try await rig.poll({ try await rig.position() }, until: { $0 >= before + 300_000 })
                    #expect(moved >= before + 300_000, "Position stuck at \(moved) µs (was \(before) µs)")
                    #expect(try await rig.currentBook() == book)
                }
                #expect(try await rig.integrityCheck() == "ok")

                // Its positions kept: stopped while paused, the next start resumes exactly there.
                try await rig.mpris("Pause")
                _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Paused" })
                try await Task.sleep(for: .milliseconds(300))  // where a paused player rests (see CrashResume)
                let paused = try await CrashResume.bookPosition(rig)
                #expect(try await rig.stop() == 0)
                #expect(try await rig.integrityCheck() == "ok")
                let resumed = try await CrashResume.restart(rig, book: book)
                #expect(abs(resumed - paused) <= 1_000, "paused at \(paused) µs, resumed at \(resumed) µs")
                Figures.record("second instance", "exit status, another bus", statuses.joined(separator: ", "))
                #expect(try await rig.stop() == 0)
            }
        }

        /// A library folder the daemon can't write (the tests run as root: the daemons run without CAP_DAC_OVERRIDE).
        /// The lock file an earlier run left still locks, opened read-only; without one, the daemon starts all the
        /// same (playback matters more than the lock) and says in its log that the library is not locked.
        @Test func inAFolderItCannotWriteTheLockLeftStillHoldsAndWithoutOneTheDaemonSaysSo() async throws {
            try await Rig.with { rig in
                try await rig.start()  // makes the library and its lock file
                #expect(try await rig.stop() == 0)
                let folder = (rig.databasePath as NSString).deletingLastPathComponent
                let lockFile = try #require(realpath(rig.databasePath, nil).map { path in
                    defer { free(path) }
                    return String(cString: path) + ".lock"
                })
                #expect(chmod(lockFile, 0o444) == 0 && chmod(folder, 0o555) == 0)
                defer { chmod(folder, 0o755) }
                let unprivileged = BadMedia.withoutFileOverride

                let first = try await rig.start(wrapper: unprivileged)
                let otherBus = try PrivateBus()
                defer { otherBus.stop() }
                let (status, stderr) = try await Self.runSecond(rig, environment: Self.environment(rig, sessionBus: otherBus),
                                                                wrapper: unprivileged)
                #expect(status == 2, "second lecternd: exit status \(status.map { "\($0)" } ?? "none, still running"); stderr:\n\(stderr)")
                // The pid is the running daemon's, though the file still names the earlier one (it can't be written).
                #expect(stderr.contains("already running") && stderr.contains("(pid \(first.pid))"), "stderr:\n\(stderr)")
                #expect(try await rig.stop() == 0)

                // No lock file, and none can be made.
                #expect(unlink(lockFile) == 0)
                let logBefore = rig.daemonLog.count
                try await rig.start(wrapper: unprivileged)
                let log = String(rig.daemonLog.dropFirst(logBefore))
                #expect(log.contains("cannot lock the library"), "\(log)")
                #expect(!FileManager.default.fileExists(atPath: lockFile))
                #expect(try await rig.stop() == 0)
            }
        }
    }
}
