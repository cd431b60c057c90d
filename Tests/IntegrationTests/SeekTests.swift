import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player {
    /// Seek, SetPosition and the Seeked signal.
    @Suite struct Seeking {
        @Test func playerctlPositionSeeksAbsoluteAndRelative() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.long)

                var mark = d.signals.mark
                #expect(try await d.playerctl("position", "2").status == 0)
                var seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition
                #expect(near(seeked, 2_000_000, within: 1_000), "Seeked \(String(describing: seeked))")
                #expect(near(try await d.position(), 2_000_000, within: 250_000))
                let shown = try await d.playerctl("position").stdout
                #expect(abs((Double(shown) ?? -1) - 2) <= 0.25, "playerctl position: \(shown)")

                mark = d.signals.mark
                #expect(try await d.playerctl("position", "1+").status == 0)
                seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition
                #expect(near(seeked, 3_000_000, within: 250_000), "Seeked after 1+: \(String(describing: seeked))")
                #expect(near(try await d.position(), 3_000_000, within: 250_000))

                mark = d.signals.mark
                #expect(try await d.playerctl("position", "1-").status == 0)
                seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition
                #expect(near(seeked, 2_000_000, within: 250_000), "Seeked after 1-: \(String(describing: seeked))")
                #expect(near(try await d.position(), 2_000_000, within: 250_000))

                // Below 0 clamps to 0.
                mark = d.signals.mark
                try await d.call("Seek", [.int64(-10_000_000)])
                seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition
                #expect(seeked == 0, "Seek before the start: Seeked \(String(describing: seeked))")
                #expect(near(try await d.position(), 0, within: 100_000))
                #expect(try await d.status() == "Paused", "seeking does not change the status")

                // Exactly one Seeked for each seek.
                try await d.signals.barrier()
                #expect(d.signals.seeked(since: mark).count == 1)
            }
        }

        @Test func seekingWhilePlayingKeepsPlayingWithoutStatusFlicker() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await d.waitForPosition(atLeast: 100_000)
                let mark = d.signals.mark
                try await d.call("Seek", [.int64(10_000_000)])
                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(30_000_000)])
                try await d.call("Seek", [.int64(-5_000_000)])
                #expect(await d.signals.waitFor(since: mark) { _ in d.signals.seeked(since: mark).count >= 3 } != nil)
                let seeked = d.signals.seeked(since: mark)
                // One for each move; after the last, one more if the output took more than 80 ms to play from there.
                #expect(seeked.count >= 3 && seeked.count <= 4 && near(seeked[1], 30_000_000, within: 1_000), "Seeked \(seeked)")
                #expect(seeked.count >= 3 && seeked.dropFirst(2).allSatisfy { near($0, 25_000_000, within: 1_500_000) },
                        "Seeked \(seeked)")
                #expect(try await d.waitForPosition(atLeast: (seeked.last ?? 25_000_000) + 200_000) >= 25_000_000)
                try await d.signals.barrier()
                let statuses = d.signals.values(of: "PlaybackStatus", since: mark)
                #expect(statuses.isEmpty, "seeking while playing announced \(statuses)")
                #expect(try await d.status() == "Playing")
            }
        }

        /// Paused near a file's end, GStreamer has already taken the next file to follow it without a gap; a move
        /// back in the file (a seek, a speed change) then plays that file from there, not the next one.
        @Test(arguments: [false, true])
        func aMoveBackAfterTheNextFileWasTakenPlaysThisFile(changingTheSpeed: Bool) async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.book)
                let first = try #require(try await d.currentURL())
                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(2_700_000)])
                // The rest of the file (0.3 s) is decoded meanwhile, and the next one taken.
                try await Task.sleep(for: .milliseconds(500))
                if changingTheSpeed {
                    try await d.set("Rate", .double(1.5))
                    try await Task.sleep(for: .milliseconds(300))
                }
                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(500_000)])
                try await d.call("Play")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await Task.sleep(for: .milliseconds(600))
                let url = try await d.currentURL()
                let position = try await d.position()
                #expect(url == first && position >= 500_000 && position <= 2_500_000,
                        "playing \(url ?? "nothing") at \(position) µs, not \(first) from 0.5 s")
                #expect(try await d.get("Rate") == .double(changingTheSpeed ? 1.5 : 1))
            }
        }

        @Test func seekPastTheEndMovesToTheNextFile() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.book)
                try await d.call("Seek", [.int64(10_000_000)])
                #expect(try await d.waitForURL(endingWith: "/book/2.ogg")?.hasSuffix("/book/2.ogg") == true)
                #expect(near(try await d.position(), 0, within: 300_000))
                #expect(try await d.status() == "Paused")
            }
        }

        @Test func setPositionIsIgnoredForAStaleTrackOrOutOfRange() async throws {
            try await DaemonFixture.with { d in
                try await d.openPaused(d.media.wav)
                let stale = try #require(try await d.trackID())
                // Opening another book makes a new queue: the old id is no longer current.
                try await d.openPaused(d.media.long)
                let current = try #require(try await d.trackID())
                #expect(current != stale, "another book's track must have another track id")
                let length = try #require(try await d.metadata()["mpris:length"]?.int64)

                var mark = d.signals.mark
                try await d.call("SetPosition", [.objectPath(current), .int64(5_000_000)])
                let seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition
                #expect(seeked == 5_000_000)
                #expect(near(try await d.position(), 5_000_000, within: 250_000))
                let before = try await d.position()

                mark = d.signals.mark
                let ignored: [(ObjectPath, Int64)] = [
                    (stale, 1_000_000),
                    (ObjectPath("/org/lectern/Lectern1/track/999999")!, 1_000_000),
                    (ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!, 1_000_000),
                    (ObjectPath("/not/a/track")!, 1_000_000),
                    (current, -1_000_000),
                    (current, length + 1_000_000),
                    (current, .max),
                ]
                for (track, position) in ignored {
                    // Ignored, not refused: no error either.
                    try await d.call("SetPosition", [.objectPath(track), .int64(position)])
                }
                try await d.signals.barrier()
                #expect(d.signals.seeked(since: mark).isEmpty, "ignored SetPosition calls sent Seeked \(d.signals.seeked(since: mark))")
                #expect(near(try await d.position(), before, within: 50_000))
                #expect(try await d.trackID() == current)
                #expect(try await d.status() == "Paused")
            }
        }
    }
}
