import DBus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Integration.Desktop {
    /// One instance per bus, and clean exits.
    @Suite struct Lifecycle {
        @Test func aSecondDaemonOnTheSameBusExitsWithStatus2AndTheFirstKeepsWorking() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let mprisOwner = try await d.nameOwner(MPRIS.busName)
                let lecternOwner = try await d.nameOwner(MPRIS.lecternName)

                let second = try d.launchAnotherDaemon()
                let status = await second.waitForExit(timeout: .seconds(15))
                if status == nil { second.kill() }
                let stderr = await second.readAll(.stderr, timeout: .seconds(2))
                #expect(status == 2, "second lecternd: \(second.termination.map { "\($0)" } ?? "still running"); stderr:\n\(stderr)")
                #expect(stderr.contains("already running"), "stderr:\n\(stderr)")
                #expect(!stderr.contains("Fatal error"), "stderr:\n\(stderr)")

                // The first one still owns both names and answers.
                #expect(try await d.nameOwner(MPRIS.busName) == mprisOwner)
                #expect(try await d.nameOwner(MPRIS.lecternName) == lecternOwner)
                #expect(!(try await d.nameHasOwner(MPRIS.busName + ".instance\(second.pid)")))
                #expect(d.daemon.isRunning)
                #expect(try await d.getAll(MPRIS.root)["Identity"] == .string("Lectern"))
                #expect(try await d.playerctl("status").stdout == "Playing")
                #expect(try await d.playerctl("pause").status == 0)
                #expect(try await d.waitForStatus("Paused") == "Paused")
            }
        }

        @Test func withoutASoundServerLibpulseIsNotEvenLoaded() async throws {
            // The tests' XDG_RUNTIME_DIR has no PulseAudio socket: the route watcher waits for one to appear.
            try await DaemonFixture.with { d in
                let log = try await poll({ (try? String(contentsOf: d.daemonLog, encoding: .utf8)) ?? "" },
                                         until: { $0.contains("PulseAudio is not reachable") })
                #expect(log.contains("/pulse/native does not exist"), "\(log)")
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // Read to the end: /proc files have no size for String(contentsOfFile:) to go by.
                let data = FileHandle(forReadingAtPath: "/proc/\(d.daemon.pid)/maps")?.readDataToEndOfFile() ?? Data()
                let maps = String(decoding: data, as: UTF8.self)
                #expect(maps.contains("libgstreamer"), "the maps were not read: \(maps.prefix(200))")
                #expect(!maps.contains("libpulse"), "libpulse and what it links (1.9 MB) loaded for nothing")
            }
        }

        @Test(arguments: [SIGTERM, SIGINT])
        func aSignalWhilePlayingExits0AndReleasesBothNames(signal: Int32) async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.book)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await d.waitForPosition(atLeast: 100_000)
                #expect(try await d.nameHasOwner(MPRIS.lecternName))

                d.daemon.signal(signal)
                let status = await d.daemon.waitForExit(timeout: .seconds(15))
                #expect(status == 0, "lecternd on signal \(signal): \(d.daemon.termination.map { "\($0)" } ?? "did not exit"):\n\(d.log)")
                #expect(d.daemon.termination == .exited(0))
                #expect(!(try await d.nameHasOwner(MPRIS.busName)))
                #expect(!(try await d.nameHasOwner(MPRIS.lecternName)))
                #expect(!d.log.contains("Fatal error"), "\(d.log)")
            }
        }

        @Test func quitMakesTheDaemonExit() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")

                try await d.call("Quit", interface: MPRIS.root)
                let status = await d.daemon.waitForExit(timeout: .seconds(15))
                #expect(status == 0, "lecternd after Quit: \(d.daemon.termination.map { "\($0)" } ?? "still running"):\n\(d.log)")
                #expect(!(try await d.nameHasOwner(MPRIS.busName)))
                #expect(!(try await d.nameHasOwner(MPRIS.lecternName)))
            }
        }

        @Test func theDaemonExitsWhenTheBusGoesAway() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                d.bus.stop()
                let status = await d.daemon.waitForExit(timeout: .seconds(15))
                #expect(status != nil, "lecternd still runs 15 s after its bus went away:\n\(d.log)")
                #expect(!d.log.contains("Fatal error"), "\(d.log)")
            }
        }

        /// Start-up claims the MPRIS name before the library is open (its longest step): a client that asks at once,
        /// as desktops do when a player appears, still gets the library as it is (never an empty one) and Lectern's
        /// own object (never "unknown").
        @Test func aClientAskingAsSoonAsTheNameAppearsGetsTheLibraryAsItIs() async throws {
            try await DaemonFixture.with { d in
                let books = try await d.importOK(d.media.longBook) + d.importOK(d.media.mp3Book)
                #expect(await d.stopDaemon() == 0)
                let names = try await d.client.signals(MatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                                                 member: "NameOwnerChanged"))
                let again = try d.launchAnotherDaemon()
                defer { if again.isRunning { again.kill() } }
                let appeared = await first(names, within: .seconds(15)) {
                    $0.arguments.first == .string(MPRIS.busName) && $0.arguments.last != .string("")
                }
                try #require(appeared != nil, "the new lecternd did not own \(MPRIS.busName)")

                async let playlists = d.getAll(MPRIS.playlists)
                async let player = d.getAll(MPRIS.player)
                async let count = d.libProperty("BookCount")
                async let listed = d.allBooks()
                async let introspection = d.client.call(Lib.busName, path: Lib.path, interface: "org.freedesktop.DBus.Introspectable",
                                                        member: "Introspect", timeout: .seconds(10))
                #expect(try await playlists["PlaylistCount"] == .uint32(UInt32(books.count)))
                #expect(try await player["PlaybackStatus"] == .string("Stopped"))
                #expect(try await count == .uint32(UInt32(books.count)))
                #expect(Set(try await listed.compactMap { $0["id"]?.int64 }) == Set(books))
                #expect(try await introspection.first?.string?.contains(Lib.library) == true)
                again.terminate()
                #expect(await again.waitForExit(timeout: .seconds(15)) == 0)
            }
        }

        @Test func aDaemonCanStartAgainAfterTheFirstOneStopped() async throws {
            try await DaemonFixture.with { d in
                #expect(await d.stopDaemon() == 0)
                let again = try d.launchAnotherDaemon()
                var owned = false
                for _ in 0..<1000 where !owned {
                    owned = try await d.nameHasOwner(MPRIS.busName)
                    if !owned { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(owned, "a new lecternd must take the names once the first has gone")
                #expect(try await d.nameHasOwner(MPRIS.lecternName))
                again.terminate()
                #expect(await again.waitForExit(timeout: .seconds(15)) == 0)
                if again.isRunning { again.kill() }
            }
        }
    }
}

/// The first message of `stream` that satisfies `predicate`, or nil after `timeout`.
private func first(_ stream: AsyncStream<ReceivedMessage>, within timeout: Duration,
                   where predicate: @escaping @Sendable (ReceivedMessage) -> Bool) async -> ReceivedMessage? {
    await withTaskGroup(of: ReceivedMessage?.self) { group in
        group.addTask {
            for await message in stream where predicate(message) { return message }
            return nil
        }
        group.addTask { try? await Task.sleep(for: timeout); return nil }
        let found = await group.next() ?? nil
        group.cancelAll()
        return found
    }
}
