import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player {
    /// Play, pause, stop, next and previous as playerctl and other clients use them.
    @Suite struct Transport {
        @Test func playPauseTogglesAndPlayNeverToggles() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await d.waitForPosition(atLeast: 100_000)

                #expect(try await d.playerctl("play-pause").status == 0)
                #expect(try await d.playerctl("status").stdout == "Paused")
                #expect(try await d.status() == "Paused")
                #expect(try await d.playerctl("play-pause").status == 0)
                #expect(try await d.playerctl("status").stdout == "Playing")

                // Play while playing: still playing, nothing announced. (The mark after a barrier: the signals of the
                // change just read back reach the recorder's connection before it, not after the mark.)
                var mark = try await d.signals.barrier()
                try await d.call("Play")
                #expect(try await d.playerctl("play").status == 0)
                try await d.signals.barrier()
                #expect(d.signals.values(of: "PlaybackStatus", since: mark).isEmpty,
                        "Play while playing announced \(d.signals.values(of: "PlaybackStatus", since: mark))")
                #expect(try await d.status() == "Playing")

                // Pause while paused: nothing changes, nothing announced, the position stays.
                try await d.call("Pause")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                let pausedAt = try await d.position()
                mark = try await d.signals.barrier()
                try await d.call("Pause")
                #expect(try await d.playerctl("pause").status == 0)
                try await d.signals.barrier()
                #expect(d.signals.values(of: "PlaybackStatus", since: mark).isEmpty)
                #expect(d.signals.seeked(since: mark).isEmpty)
                #expect(try await d.status() == "Paused")
                #expect(near(try await d.position(), pausedAt, within: 50_000))

                // Paused resumes where it was (not from the start).
                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(20_000_000)])
                #expect(near(try await d.position(), 20_000_000, within: 300_000))
                try await d.call("Play")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.position() >= 19_700_000, "Play from Paused must resume at 20 s")

                // Stop, then Play: from the beginning of the same file.
                let url = try await d.currentURL()
                #expect(try await d.playerctl("stop").status == 0)
                #expect(try await d.waitForStatus("Stopped") == "Stopped")
                #expect(try await d.playerctl("status").stdout == "Stopped")
                #expect(try await d.position() == 0)
                try await d.call("Play")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let restarted = try await d.position()
                #expect(restarted >= 0 && restarted < 5_000_000, "Play after Stop must start near 0, not at \(restarted) µs")
                #expect(try await d.currentURL() == url)
                #expect(try await d.waitForPosition(atLeast: 100_000) >= 100_000, "position must move after Play")
            }
        }

        @Test func nextAndPreviousMoveThroughTheFolderKeepingPausedOrPlaying() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.longBook)
                #expect(try await d.currentURL() == MediaLibrary.uri(d.media.longBook.appendingPathComponent("1.ogg")))
                #expect(try await d.get("CanGoPrevious") == .boolean(true))  // Previous restarts the first track

                // From paused: stays paused.
                var mark = d.signals.mark
                #expect(try await d.playerctl("next").status == 0)
                #expect(try await d.waitForURL(endingWith: "/longbook/2.ogg")?.hasSuffix("/longbook/2.ogg") == true)
                // One PropertiesChanged carries the new Metadata, and only what changed (not PlaybackStatus).
                let change = d.signals.playerChanges(since: mark).first { $0["Metadata"] != nil }
                #expect(change != nil && change?["PlaybackStatus"] == nil, "\(d.signals.playerChanges(since: mark))")
                #expect(try await d.playerctl("metadata", "xesam:url").stdout.hasSuffix("/longbook/2.ogg"))
                // Once the new file is ready (it can be positioned), still paused and never announced Playing.
                let positioned = d.signals.mark  // SetPosition's Seeked, not one Next might have sent
                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(1_000_000)])
                #expect(await d.signals.waitFor(since: positioned) { $0.seekedPosition != nil } != nil)
                try await d.signals.barrier()
                #expect(try await d.status() == "Paused")
                #expect(!d.signals.values(of: "PlaybackStatus", since: mark).contains(.string("Playing")),
                        "Next from Paused started playing")
                #expect(try await d.get("CanGoPrevious") == .boolean(true))

                #expect(try await d.playerctl("previous").status == 0)
                #expect(try await d.waitForURL(endingWith: "/longbook/1.ogg")?.hasSuffix("/longbook/1.ogg") == true)
                #expect(try await d.status() == "Paused")

                // From playing: stays playing.
                #expect(try await d.playerctl("play").status == 0)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                mark = d.signals.mark
                #expect(try await d.playerctl("next").status == 0)
                #expect(try await d.waitForURL(endingWith: "/longbook/2.ogg")?.hasSuffix("/longbook/2.ogg") == true)
                #expect(try await d.status() == "Playing")
                #expect(try await d.waitForPosition(atLeast: 200_000) >= 200_000, "the next file plays")
                let statuses = d.signals.values(of: "PlaybackStatus", since: mark)
                #expect(statuses.isEmpty, "Next while playing flickered through \(statuses)")
            }
        }

        @Test func canGoNextIsFalseOnTheLastFileUnlessLoopingThePlaylist() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.book)
                try await d.call("Next")
                try await d.call("Next")
                #expect(try await d.waitForURL(endingWith: "/book/10.ogg")?.hasSuffix("/book/10.ogg") == true)
                #expect(try await d.get("LoopStatus") == .string("None"))
                #expect(try await d.get("CanGoNext") == .boolean(false))
                #expect(try await d.get("CanGoPrevious") == .boolean(true))
                // Next on the last file with no loop: nothing happens.
                try await d.call("Next")
                try await d.signals.barrier()
                #expect(try await d.currentURL()?.hasSuffix("/book/10.ogg") == true)

                let mark = d.signals.mark
                #expect(try await d.playerctl("loop", "Playlist").status == 0)
                #expect(try await d.waitForProperty("CanGoNext") { $0 == .boolean(true) } == .boolean(true))
                #expect(try await d.playerctl("loop").stdout == "Playlist")
                #expect(try await d.get("LoopStatus") == .string("Playlist"))
                let change = d.signals.playerChanges(since: mark).first { $0["LoopStatus"] != nil }
                #expect(change?["LoopStatus"] == .string("Playlist"))
                #expect(change?["CanGoNext"] == .boolean(true), "CanGoNext batched with LoopStatus: \(String(describing: change))")
                // And Next wraps around.
                #expect(try await d.playerctl("next").status == 0)
                #expect(try await d.waitForURL(endingWith: "/book/1.ogg")?.hasSuffix("/book/1.ogg") == true)
                #expect(try await d.status() == "Paused")
            }
        }

        @Test func loopPlaylistWrapsFromTheLastFileToTheFirstOnItsOwn() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.book)
                try await d.call("Next")
                try await d.call("Next")
                #expect(try await d.waitForURL(endingWith: "/book/10.ogg")?.hasSuffix("/book/10.ogg") == true)
                try await d.set("LoopStatus", .string("Playlist"))
                let mark = d.signals.mark
                try await d.call("Play")
                #expect(try await d.waitForURL(endingWith: "/book/1.ogg", timeout: .seconds(15))?.hasSuffix("/book/1.ogg") == true)
                #expect(try await d.status() == "Playing")
                let statuses = d.signals.values(of: "PlaybackStatus", since: mark).compactMap(\.string)
                #expect(statuses == ["Playing"], "PlaybackStatus went through \(statuses)")
            }
        }

        @Test func loopTrackRepeatsTheSameFile() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.book)
                let track = try await d.trackID()
                try await d.set("LoopStatus", .string("Track"))
                #expect(try await d.get("CanGoNext") == .boolean(true), "Next still goes to 2.ogg")
                try await d.call("Play")
                // It gets near the end, then starts again from the beginning of the same file.
                #expect(try await d.waitForPosition(atLeast: 2_000_000) >= 2_000_000)
                let restarted = try await d.waitForProperty("Position", timeout: .seconds(10)) { ($0.int64 ?? .max) < 1_500_000 }
                #expect((restarted.int64 ?? .max) < 1_500_000, "never looped: position \(restarted)")
                #expect(try await d.currentURL()?.hasSuffix("/book/1.ogg") == true)
                #expect(try await d.trackID() == track)
                #expect(try await d.status() == "Playing")
            }
        }

        @Test func shuffleVisitsEveryOtherFileOnceWithoutChangingTheCurrentOne() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.longBook)
                try await d.set("Shuffle", .boolean(true))
                #expect(try await d.currentURL()?.hasSuffix("/longbook/1.ogg") == true)
                var seen = [try await d.currentURL() ?? ""]
                for _ in 0..<2 {
                    #expect(try await d.get("CanGoNext") == .boolean(true))
                    try await d.call("Next")
                    try await d.signals.barrier()
                    seen.append(try await d.currentURL() ?? "")
                }
                #expect(Set(seen).count == 3, "shuffled order \(seen)")
                #expect(try await d.get("CanGoNext") == .boolean(false), "all files played once")
                #expect(try await d.status() == "Paused")
            }
        }
    }
}
