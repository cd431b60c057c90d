import Foundation
import LecternCore
import Testing

/// A book's skip-silence setting reaches the engine with the book and goes with it; its values are kept in range,
/// and a pause is shortened as the listener set it, never to nothing.
@Suite struct SkipSilenceTests {
    @Test func aPauseIsShortenedByTheAmountBeyondTheThreshold() {
        let skip = SkipSilence(threshold: .milliseconds(500), amount: 0.8)
        #expect(skip.shortened(.milliseconds(300)) == .milliseconds(300))
        #expect(skip.shortened(.milliseconds(500)) == .milliseconds(500))
        #expect(abs((skip.shortened(.seconds(3)) - .seconds(1)) / .seconds(1)) < 1e-9)
        // All of the excess removed: every long pause lasts the threshold, not less.
        #expect(SkipSilence(threshold: .seconds(1), amount: 1).shortened(.seconds(20)) == .seconds(1))
    }

    @Test func valuesOutOfRangeAreClamped() {
        let low = SkipSilence(threshold: .milliseconds(10), amount: 0)
        #expect(low.threshold == .milliseconds(100))
        #expect(low.amount == 0.1)
        let high = SkipSilence(threshold: .seconds(60), amount: 5)
        #expect(high.threshold == .seconds(10))
        #expect(high.amount == 1)
        #expect(SkipSilence(threshold: .seconds(1), amount: .nan).amount == SkipSilence.standard.amount)
    }

    @Test func itGoesWithTheBook() async throws {
        try await withHarness { h in
            func told() -> [SkipSilence?] {
                h.engine.calls.compactMap { call -> SkipSilence?? in
                    if case .setSkipSilence(let skipping) = call { return .some(skipping) } else { return nil }
                }
            }
            // Off: the engine is not told anything.
            await h.player.open(makeItems(2), settings: PlaybackSettings(volume: 1.5))
            #expect(told().isEmpty)
            // On with the book; changed; settings applied again keep it; files opened without settings play
            // every pause as recorded.
            let on = SkipSilence.standard
            let shorter = SkipSilence(threshold: .milliseconds(300), amount: 1)
            await h.player.open(makeItems(2), settings: PlaybackSettings(skipSilence: on))
            await h.player.setSkipSilence(shorter)
            try await h.player.apply(PlaybackSettings(volume: 1, skipSilence: shorter))
            await h.player.open(makeItems(1))
            #expect(told() == [on, shorter, nil])
        }
    }
}

/// A pause skip silence shortened moves the position on faster than the Rate: clients that reckon the position from
/// the Rate are told (``PlayerEvent/silenceSkipped(_:)``, Seeked on MPRIS) where it jumped to, once the jump is heard,
/// and the time saved is counted.
@Suite struct SkippedSilenceTests {
    /// Where the player told that skip silence moved the position to (within the chapter).
    static func skips(_ log: EventLog) -> [Duration] {
        log.all.compactMap { if case .silenceSkipped(let position) = $0 { position } else { nil } }
    }

    /// File 1 of ``chapteredItems()`` (chapters B1 5–30 s, B2 30–60 s, B3 from 60 s) played for a second from
    /// `position` with skip silence on; its chapter then.
    static func playChaptered(from position: Duration, _ h: Harness) async -> Int? {
        await h.player.open(chapteredItems(), startAt: 1, position: position, settings: PlaybackSettings(skipSilence: .standard))
        await h.ready(.seconds(100))
        await h.play(for: .seconds(1))
        return h.player.view.state.currentChapter
    }

    @Test func aShortenedPauseIsToldWithThePositionItJumpedTo() async {
        await withHarness { h in
            await h.playSkippingSilence(for: .seconds(3))
            #expect(Self.skips(h.log).isEmpty, "playing at the Rate tells nothing")
            #expect(h.log.seeks == [.zero], "only where it started")

            // 2 s of a pause dropped: the file's position jumps 2 s ahead of the Rate's reckoning.
            h.engine.skipSilence(removing: .seconds(2))
            await h.play(for: .milliseconds(500))
            let skips = Self.skips(h.log)
            #expect(skips.count == 1, "\(h.log.all)")
            #expect(skips.first.map { near($0, .milliseconds(5_500)) } == true, "told \(skips), the file at 5.5 s")
            #expect(h.player.view.silenceSkipped == .seconds(2))
            #expect(near(h.player.view.position(), .milliseconds(5_500)), "the view's position jumped too")

            // Playing on at the Rate: nothing more.
            await h.play(for: .seconds(2))
            #expect(Self.skips(h.log).count == 1)
            #expect(h.player.view.silenceSkipped == .seconds(2))
        }
    }

    @Test func atASpeedTheFileJumpsByTheListeningTimeRemovedTimesTheSpeed() async throws {
        try await withHarness { h in
            await h.playSkippingSilence(rate: 2, for: .seconds(1))
            // The file's position on the manual clock (the view's reckons on from its last tick in real time).
            let before = try #require(h.engine.position)
            // 1 s of listening removed at 2x: 2 s of the file.
            h.engine.skipSilence(removing: .seconds(1))
            await h.play(for: .milliseconds(500))
            let told = try #require(Self.skips(h.log).first)
            #expect(near(told, before + .seconds(3)), "told \(told) after \(before)")
            #expect(h.player.view.silenceSkipped == .seconds(1), "listening time saved, not the file's")
        }
    }

    @Test func aPauseDroppedAheadOfTheSoundIsToldWhenItIsHeard() async {
        await withHarness { h in
            await h.playSkippingSilence(for: .seconds(1))
            // A sink that renders ahead: the element dropped the silence, the listener hears the splice a second later.
            h.engine.removeSilence(.milliseconds(1_500))
            await h.play(for: .seconds(1))
            #expect(Self.skips(h.log).isEmpty, "nothing heard yet: \(h.log.all)")
            #expect(h.player.view.silenceSkipped == .zero)
            h.engine.hearSkippedSilence(.milliseconds(1_500))
            await h.play(for: .milliseconds(500))
            let skips = Self.skips(h.log)
            #expect(skips.count == 1 && skips.first.map { near($0, .seconds(4)) } == true, "\(skips)")
            #expect(h.player.view.silenceSkipped == .milliseconds(1_500))
        }
    }

    @Test func aJumpIntoTheNextChapterIsToldWithinIt() async {
        await withHarness { h in
            let chapter = await Self.playChaptered(from: .seconds(28), h)
            h.log.clear()
            // The pause at the chapter's end shortened: 29 s + 3 s skipped + 0.5 s played.
            h.engine.skipSilence(removing: .seconds(3))
            await h.play(for: .milliseconds(500))
            let events = h.log.all.filter { if case .playing = $0 { false } else { true } }
            guard events.count == 2, case .stateChanged(let state, _) = events[0], case .silenceSkipped(let position) = events[1] else {
                Issue.record("expected the new chapter, then where in it: \(events)")
                return
            }
            #expect(state.currentChapter == chapter.map { $0 + 1 })
            #expect(near(position, .milliseconds(2_500)), "\(position) into the chapter that starts at 30 s")
        }
    }

    /// A moment planned at the speed (here the next chapter) is planned again from where the jump landed: it comes when
    /// the file reaches it, not at the tick after.
    @Test func theNextChapterAfterAShortenedPauseComesOnTime() async {
        await withHarness { h in
            let chapter = await Self.playChaptered(from: .seconds(25), h)
            // 2.2 s of a pause shortened: the next tick (at 1.5 s) finds the file at 28.7 s, 1.3 s before B2, which it
            // reaches between two ticks (at 2.8 s; the ticks come at 2.5 and 3 s).
            h.engine.skipSilence(removing: .milliseconds(2_200))
            await h.play(for: .milliseconds(1_750), step: .milliseconds(50))
            #expect(h.player.view.state.currentChapter == chapter, "B2 before 30 s: at \(h.engine.position.map { "\($0)" } ?? "?")")
            await h.play(for: .milliseconds(50), step: .milliseconds(50))
            #expect(h.player.view.state.currentChapter == chapter.map { $0 + 1 },
                    "not B2 at \(h.engine.position.map { "\($0)" } ?? "?"): it waits for the next tick")
        }
    }

    @Test func aPauseAtTheStartOfTheNextFileIsTold() async {
        await withHarness { h in
            await h.playSkippingSilence(files: 2, for: .seconds(1))
            // The gapless handover, and the next file's opening pause shortened before the first tick in it.
            await h.finish()
            h.engine.skipSilence(removing: .seconds(1))
            await h.play(for: .milliseconds(500))
            #expect(h.player.view.state.currentIndex == 1)
            let skips = Self.skips(h.log)
            #expect(skips.count == 1 && skips.first.map { near($0, .milliseconds(1_500)) } == true, "\(skips)")
            #expect(h.player.view.silenceSkipped == .seconds(1))
        }
    }

    @Test func silenceDroppedBeforeASeekIsNotCounted() async {
        await withHarness { h in
            await h.playSkippingSilence(for: .seconds(1))
            // Dropped ahead of the sound, which the seek then flushed: never heard.
            h.engine.removeSilence(.seconds(2))
            await h.player.seek(by: .seconds(30))
            await h.play(for: .seconds(2))
            #expect(Self.skips(h.log).isEmpty, "\(h.log.all)")
            #expect(h.player.view.silenceSkipped == .zero)
            // And one skipped after it is told.
            h.engine.skipSilence(removing: .seconds(1))
            await h.play(for: .milliseconds(500))
            #expect(Self.skips(h.log).count == 1)
            #expect(h.player.view.silenceSkipped == .seconds(1))
        }
    }

    @Test func aRebuiltPipelineCountsAgainFromZero() async {
        await withHarness { h in
            await h.playSkippingSilence(for: .seconds(1))
            h.engine.skipSilence(removing: .seconds(2))
            await h.play(for: .seconds(1))
            // The engine's count starts again (a new pipeline); what it removes then still counts.
            h.engine.silenceRemoved = .zero
            await h.play(for: .seconds(1))
            h.engine.skipSilence(removing: .seconds(1))
            await h.play(for: .seconds(1))
            #expect(h.player.view.silenceSkipped == .seconds(3))
            #expect(Self.skips(h.log).count == 2)
        }
    }
}

extension Harness {
    /// `files` files of 100 s opened with skip silence on, at `rate`, played for `duration`.
    func playSkippingSilence(files: Int = 1, rate: Double = 1, for duration: Duration) async {
        await player.open(makeItems(files), settings: PlaybackSettings(rate: rate, skipSilence: .standard))
        await ready(.seconds(100))
        await play(for: duration)
    }
}
