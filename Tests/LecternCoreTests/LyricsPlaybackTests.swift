import Foundation
import LecternCore
import Testing

/// The synced line the player publishes, on the fake engine and the manual clock: a wake-up at each line's start
/// (not the tick), and the right line at once after seeks, speed changes, pauses and the gapless handover.
@Suite struct LyricsPlaybackTests {
    /// Lines every `gap` from `first`, named "<prefix> n".
    static func lyrics(_ prefix: String, count: Int, first: Duration, gap: Duration) -> Lyrics {
        let text = (0..<count).map { n in
            let start = first + gap * n
            let ms = start.microseconds / 1000
            return String(format: "[%02lld:%02lld.%03lld]%@ %d", ms / 60_000, ms / 1000 % 60, ms % 1000, prefix, n)
        }.joined(separator: "\n")
        return try! Lyrics(lrc: Array(text.utf8))
    }

    /// Two files of 100 s; the first with lines every 300 ms from 300 ms, the second every 2 s from 1 s.
    static func items() -> [MediaItem] {
        var items = makeItems(2)
        items[0].lyrics = lyrics("a", count: 100, first: .milliseconds(300), gap: .milliseconds(300))
        items[1].lyrics = lyrics("b", count: 10, first: .seconds(1), gap: .seconds(2))
        return items
    }

    /// The line heard and the next one's start.
    struct Place: Equatable {
        var index: Int?
        var next: Duration?
    }

    func place(_ h: Harness) -> Place? {
        let state = h.player.view.state
        return state.lyricsLine.map { Place(index: $0.index, next: state.lyricsNextLineStart) }
    }

    /// The line indices published, each once, in order.
    func lines(_ h: Harness) -> [Int?] {
        var seen: [Int?] = []
        for state in h.log.states where state.lyricsLine != nil {
            if seen.last != .some(state.lyricsLine?.index) { seen.append(state.lyricsLine?.index) }
        }
        return seen
    }

    /// Moves both clocks by `elapsed`, then lets the wake-up it made due run. Playing, first waits for the tick
    /// and the wake-up to be asleep on the manual clock: a sleep begun after the move would count from there.
    func pass(_ h: Harness, _ elapsed: Duration) async {
        if h.player.view.state.status == .playing {
            await waitUntil("the tick and the wake-up asleep") { h.tickClock.sleeperCount >= 2 }
        }
        h.engine.advance(by: elapsed)
        h.tickClock.advance(by: elapsed)
        try? await Task.sleep(for: .milliseconds(1))
        await h.settle()
    }

    @Test func eachLineIsPublishedAtItsStartByAWakeUpNotTheTick() async {
        await withHarness { h in
            await h.player.open(Self.items())
            await h.ready(.seconds(100))
            #expect(place(h) == Place(index: nil, next: .milliseconds(300)))
            // 300 ms steps: each lands on a line's start; the tick (every 500 ms) alone would miss every other line.
            for n in 0..<5 {
                await pass(h, .milliseconds(300))
                await waitUntil("line \(n)") { h.player.view.state.lyricsLine?.index == n }
            }
            #expect(lines(h) == [nil, 0, 1, 2, 3, 4])
            let state = h.player.view.state
            #expect(state.currentLyricsLine == Lyrics.Line(start: .milliseconds(1_500), text: "a 4"))
            #expect(state.lyricsNextLineStart == .milliseconds(1_800))
        }
    }

    @Test func seeksForwardAndBackPublishTheLineThereAtOnce() async {
        await withHarness { h in
            await h.player.open(Self.items())
            await h.ready(.seconds(100))
            await h.player.seek(by: .seconds(10))  // 10 s: "a 32" started at 9.9 s
            #expect(place(h) == Place(index: 32, next: .milliseconds(10_200)))
            await h.player.seek(by: .seconds(-9))  // 1 s: "a 2" started at 0.9 s
            #expect(place(h) == Place(index: 2, next: .milliseconds(1_200)))
            await h.player.seek(by: .seconds(-5))  // back to 0: before the first line
            #expect(place(h) == Place(index: nil, next: .milliseconds(300)))
            // And playing on from there, the wake-ups follow the new place.
            await pass(h, .milliseconds(300))
            await waitUntil("the first line") { h.player.view.state.lyricsLine?.index == 0 }
            #expect(lines(h) == [nil, 32, 2, nil, 0])
        }
    }

    @Test func atSpeedOneAndAHalfTheLinesComeSooner() async throws {
        await withHarness { h in
            await h.player.open(Self.items())
            await h.ready(.seconds(100))
            try? await h.player.setRate(1.5)
            // 300 ms of the file in 200 ms: the wake-up comes then, long before the first tick (500 ms).
            for n in 0..<3 {
                await pass(h, .milliseconds(200))
                await waitUntil("line \(n) at 1.5") { h.player.view.state.lyricsLine?.index == n }
            }
            #expect(lines(h) == [nil, 0, 1, 2])
        }
    }

    @Test func pausedTheLineStaysAndPlayingAgainGoesOn() async {
        await withHarness { h in
            await h.player.open(Self.items())
            await h.ready(.seconds(100))
            await pass(h, .milliseconds(300))
            await waitUntil("line 0") { h.player.view.state.lyricsLine?.index == 0 }
            await h.player.pause()
            await pass(h, .seconds(5))
            #expect(h.player.view.state.lyricsLine?.index == 0)
            await h.player.play()
            await pass(h, .milliseconds(300))
            await waitUntil("line 1") { h.player.view.state.lyricsLine?.index == 1 }
            #expect(lines(h) == [nil, 0, 1])
        }
    }

    @Test func theGaplessHandoverGoesOnWithTheNextFilesLines() async {
        await withHarness { h in
            await h.player.open(Self.items(), position: .seconds(99))
            await h.ready(.seconds(100))
            #expect(h.player.view.state.lyricsLine?.index == 99)  // "a 99" at 30 s, the last
            #expect(h.player.view.state.lyricsNextLineStart == nil)
            await h.finish()  // the engine goes on with the second file
            #expect(h.player.view.state.currentIndex == 1)
            #expect(place(h) == Place(index: nil, next: .seconds(1)))
            await pass(h, .seconds(1))
            await waitUntil("the second file's first line") { h.player.view.state.lyricsLine?.index == 0 }
            #expect(h.player.view.state.currentLyricsLine?.text == "b 0")
        }
    }

    @Test func aFileWithoutSyncedLinesHasNoCursor() async {
        await withHarness { h in
            var items = makeItems(1)
            items[0].lyrics = try! Lyrics(lrc: Array("Just words".utf8))
            await h.player.open(items)
            await h.ready(.seconds(100))
            #expect(h.player.view.state.lyricsLine == nil)
            #expect(h.player.view.state.current?.lyrics?.text == "Just words")
            await h.player.stop()
            #expect(h.player.view.state.lyricsLine == nil)
        }
    }
}
