import DBus
import Foundation
import Testing
import TestSupport

extension Reliability {
    /// A second lecternd on the same bus and database refuses to start and touches neither the first one nor
    /// the database. (IntegrationTests.Lifecycle checks the exit status and message with the default database.)
    @Suite struct SecondInstance {
        /// The bytes of the database and its WAL.
        static func databaseFiles(_ rig: Rig) -> [String: Data] {
            var out: [String: Data] = [:]
            for suffix in ["", "-wal", "-shm"] {
                out[suffix] = FileManager.default.contents(atPath: rig.databasePath + suffix)
            }
            return out
        }

        @Test func aSecondDaemonRefusesToStartAndLeavesTheFirstAndItsDatabaseUntouched() async throws {
            try await Rig.with { rig in
                let first = try await rig.start()
                let book = try await rig.importBook(try ReliabilityMedia.shared().book)
                try await rig.lectern("ActivateBook", [.int64(book), .boolean(true)])
                _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Playing" })
                try await rig.mpris("Pause")
                _ = try await rig.poll({ try await rig.status() }, until: { $0 == "Paused" })
                try await Task.sleep(for: .milliseconds(300))  // the pause's save is written
                let files = Self.databaseFiles(rig)
                let position = try await rig.position()

                let second = try Subprocess(builtExecutable("lecternd").path, rig.daemonArguments, environment: rig.environment,
                                            stdout: .pipe, stderr: .pipe)
                let status = await second.waitForExit(timeout: .seconds(15))
                if status == nil { second.kill() }
                let stderr = await second.readAll(.stderr, timeout: .seconds(2))
                #expect(status == 2, "second lecternd: \(second.termination.map { "\($0)" } ?? "still running"); stderr:\n\(stderr)")
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
    }
}
