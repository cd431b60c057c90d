import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player {
    /// Writable properties: clamping, refusals, and PropertiesChanged only for real changes.
    @Suite struct Properties {
        @Test func volumeAnnouncesOnlyRealChangesAndClampsBelowZero() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.long)
                #expect(try await d.get("Volume") == .double(1))

                var mark = d.signals.mark
                try await d.set("Volume", .double(1))
                try await d.signals.barrier()
                #expect(d.signals.playerChanges(since: mark).isEmpty,
                        "setting Volume to its value announced \(d.signals.playerChanges(since: mark))")

                mark = d.signals.mark
                try await d.set("Volume", .double(0.5))
                try await d.signals.barrier()
                let changes = d.signals.playerChanges(since: mark)
                #expect(changes.count == 1, "one PropertiesChanged for one change: \(changes)")
                #expect(changes.first?["Volume"] == .double(0.5))
                #expect(try await d.get("Volume") == .double(0.5))

                mark = d.signals.mark
                try await d.set("Volume", .double(-1))
                #expect(try await d.get("Volume") == .double(0))
                try await d.signals.barrier()
                #expect(d.signals.values(of: "Volume", since: mark) == [.double(0)])

                mark = d.signals.mark
                #expect(await d.errorName { try await d.set("Volume", .double(.nan)) } == DBusErrors.invalidArgs)
                try await d.signals.barrier()
                #expect(d.signals.playerChanges(since: mark).isEmpty)
                #expect(try await d.get("Volume") == .double(0))

                try await d.set("Volume", .double(1.5))
                #expect(try await d.get("Volume") == .double(1.5), "above 1 is allowed")
                #expect(try await d.playerctl("volume", "0.25").status == 0)
                #expect(try await d.waitForProperty("Volume") { $0 == .double(0.25) } == .double(0.25))
            }
        }

        @Test func rateIsClampedAndZeroPauses() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // The file prerolled and playing, and what the media reader finds (which changes Metadata): both
                // before the marks below.
                _ = try await d.waitForPosition(atLeast: 1)
                try await d.waitForTracksDiscovered()
                let minimum = try #require(try await d.get("MinimumRate").double)
                let maximum = try #require(try await d.get("MaximumRate").double)

                // Rate 0 pauses and keeps the rate.
                var mark = d.signals.mark
                try await d.set("Rate", .double(0))
                #expect(try await d.waitForStatus("Paused") == "Paused")
                #expect(try await d.get("Rate") == .double(1))
                try await d.signals.barrier()
                #expect(d.signals.values(of: "Rate", since: mark).isEmpty)

                try await d.call("Play")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                mark = d.signals.mark
                try await d.set("Rate", .double(10))
                #expect(try await d.get("Rate") == .double(maximum))
                try await d.signals.barrier()
                #expect(d.signals.values(of: "Rate", since: mark) == [.double(maximum)])
                try await d.set("Rate", .double(0.01))
                #expect(try await d.get("Rate") == .double(minimum))
                try await d.set("Rate", .double(1.5))
                #expect(try await d.get("Rate") == .double(1.5))
                #expect(try await d.status() == "Playing")

                // NaN: refused, nothing changes.
                mark = d.signals.mark
                #expect(await d.errorName { try await d.set("Rate", .double(.nan)) } == DBusErrors.invalidArgs)
                #expect(await d.errorName { try await d.set("Rate", .double(.infinity)) } == DBusErrors.invalidArgs)
                try await d.signals.barrier()
                #expect(d.signals.playerChanges(since: mark).isEmpty)
                #expect(try await d.get("Rate") == .double(1.5))
                #expect(try await d.status() == "Playing")
            }
        }

        @Test func loopStatusAndShuffle() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.book)

                var mark = d.signals.mark
                #expect(await d.errorName { try await d.set("LoopStatus", .string("Bogus")) } == DBusErrors.invalidArgs)
                try await d.signals.barrier()
                #expect(d.signals.playerChanges(since: mark).isEmpty)
                #expect(try await d.get("LoopStatus") == .string("None"))

                for mode in ["Track", "Playlist", "None"] {
                    mark = d.signals.mark
                    try await d.set("LoopStatus", .string(mode))
                    #expect(try await d.get("LoopStatus") == .string(mode))
                    #expect(try await d.playerctl("loop").stdout == mode)
                    try await d.signals.barrier()
                    #expect(d.signals.values(of: "LoopStatus", since: mark) == [.string(mode)])
                }

                mark = d.signals.mark
                #expect(try await d.playerctl("shuffle", "On").status == 0)
                #expect(try await d.waitForProperty("Shuffle") { $0 == .boolean(true) } == .boolean(true))
                #expect(try await d.playerctl("shuffle").stdout == "On")
                // Shuffling never changes the current file.
                #expect(try await d.currentURL()?.hasSuffix("/book/1.ogg") == true)
                #expect(try await d.playerctl("shuffle", "Off").status == 0)
                #expect(try await d.waitForProperty("Shuffle") { $0 == .boolean(false) } == .boolean(false))
                #expect(try await d.playerctl("shuffle").stdout == "Off")
                try await d.signals.barrier()
                #expect(d.signals.values(of: "Shuffle", since: mark) == [.boolean(true), .boolean(false)])
                // Setting it to what it is: nothing announced.
                mark = d.signals.mark
                try await d.set("Shuffle", .boolean(false))
                try await d.signals.barrier()
                #expect(d.signals.playerChanges(since: mark).isEmpty)
            }
        }
    }
}
