import Foundation
import LecternCore
import Testing

/// Another sound asking for the output (the sound server's cork and uncork requests, as the engine reports them):
/// the player pauses and resumes only what the interruption paused, the listener's commands win, and the route's
/// pauses and the interruption's combine so that playback resumes only once both are over.
@Suite struct InterruptionTests {
    static let options = ListeningOptions(smartRewind: SmartRewind(threshold: .seconds(60), minimum: .seconds(5),
                                                                   maximum: .seconds(25), fullAfter: .seconds(260)))

    /// A player on the fake engine with smart rewind (5 to 25 s after 60 to 260 s), playing file 0 at 50 s.
    private func playingAt50(_ body: (Harness) async throws -> Void) async rethrows {
        try await withHarness(options: Self.options) { h in
            await h.player.open(makeItems(2), position: .seconds(50))
            await h.ready(.seconds(100))
            #expect(await h.player.snapshot.status == .playing)
            h.reset()
            try await body(h)
        }
    }

    private var interruptions: (EventLog) -> [InterruptionNews] {
        { log in log.all.compactMap { if case .interruption(let news) = $0 { news } else { nil } } }
    }

    @Test func aCorkRequestWhilePlayingPausesAsTheInterruptionsDoing() async {
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            #expect(await h.player.snapshot.status == .paused)
            #expect(h.engine.calls == [.pause])
            #expect(await h.player.isPausedForInterruption)
            #expect(!(await h.player.isPausedForLostOutput))
            #expect(interruptions(h.log) == [.began(paused: true)])
        }
    }

    @Test func theUncorkResumesWhereItWasAfterAShortCall() async {
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            h.tickClock.advance(by: .seconds(20))
            h.reset()
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .playing)
            #expect(h.engine.calls == [.play])
            #expect(h.log.seeks == [])
            #expect(!(await h.player.isPausedForInterruption))
            #expect(interruptions(h.log) == [.ended(resumed: true)])
        }
    }

    @Test func theUncorkAfterALongCallResumesWithTheSmartRewind() async {
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            h.tickClock.advance(by: .seconds(160))
            h.reset()
            await h.send(.interruptionEnded)
            #expect(h.engine.calls == [.seek(.seconds(35)), .play])
            #expect(h.log.seeks == [.seconds(35)])
            #expect(await h.player.snapshot.status == .playing)
        }
    }

    @Test func theEndOfACallHeardTwiceResumesOnceAndIsSaidOnce() async {
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            await h.player.interruptionEnded()  // the server unmuted the stream (the output watcher saw it)
            await h.send(.interruptionEnded)    // then its uncork request
            #expect(await h.player.snapshot.status == .playing)
            #expect(interruptions(h.log) == [.began(paused: true), .ended(resumed: true)])
        }
        await playingAt50 { h in
            await h.send(.interruptionEnded)  // no request stood
            #expect(interruptions(h.log) == [])
            #expect(h.engine.calls == [])
        }
    }

    @Test func theListenersPauseDuringTheCallWins() async {
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            await h.player.pause()
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .paused)
            #expect(interruptions(h.log) == [.began(paused: true), .ended(resumed: false)])
        }
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            await h.player.skip(by: .seconds(-10))  // any command, not only Pause
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .paused)
        }
    }

    @Test func theListenersPlayDuringTheCallWinsAndIsHeard() async {
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            await h.player.play()
            #expect(await h.player.snapshot.status == .playing)
            // The server muted the stream with its request: the listener means to hear it.
            #expect(interruptions(h.log) == [.began(paused: true), .playingThrough])
            h.reset()
            // Playing, the stream is not corked, and PulseAudio sends no uncork; one would change nothing.
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .playing)
            #expect(h.engine.calls == [])
            #expect(interruptions(h.log) == [])
            // Said once per request: a later pause and play is plain.
            await h.player.pause()
            await h.player.play()
            #expect(interruptions(h.log) == [])
        }
    }

    @Test func aCorkWhilePausedChangesNothingAndTheUncorkDoesNotStartIt() async {
        await playingAt50 { h in
            await h.player.pause()
            h.reset()
            await h.send(.interruptionBegan)
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .paused)
            #expect(h.engine.calls == [])
            #expect(interruptions(h.log) == [.began(paused: false), .ended(resumed: false)])
        }
    }

    @Test func aCorkWhileStoppedChangesNothing() async {
        await playingAt50 { h in
            await h.player.stop()
            h.reset()
            await h.send(.interruptionBegan)
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .stopped)
            #expect(h.engine.calls == [])
        }
    }

    @Test func ignoredInterruptionsPlayOnAndAreHeard() async {
        await playingAt50 { h in
            await h.player.setInterruptions(.ignore)
            await h.send(.interruptionBegan)
            #expect(await h.player.snapshot.status == .playing)
            #expect(h.engine.calls == [])
            #expect(interruptions(h.log) == [.began(paused: false), .playingThrough])
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .playing)
            #expect(h.engine.calls == [])
        }
    }

    @Test func aPauseMadeBeforeTheModeChangedToIgnoreIsStillResumed() async {
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            await h.player.setInterruptions(.ignore)
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .playing)
        }
    }

    @Test func aCorkWhileLoadingPausesBeforeThePipelinePlays() async {
        await withHarness { h in
            await h.player.open(makeItems(2), position: .seconds(50))
            await h.send(.interruptionBegan)
            #expect(await h.player.snapshot.status == .paused)
            await h.ready(.seconds(100))
            #expect(!h.engine.calls.contains(.play))
            await h.send(.interruptionEnded)
            #expect(await h.player.snapshot.status == .playing)
            #expect(h.engine.isPlaying)
        }
    }

    @Test func theOutputFailingDuringTheCallLeavesItPausedForTheListener() async {
        await playingAt50 { h in
            await h.send(.interruptionBegan)
            await h.send(.outputFailed("Connection terminated"))
            await h.send(.interruptionEnded)  // none comes from a dead stream; one would change nothing
            #expect(await h.player.snapshot.status == .paused)
            #expect(!(await h.player.isPausedForLostOutput))
            #expect(await h.player.position == .seconds(50))
        }
    }

    // MARK: - With a route change

    @Test func unpluggedDuringTheCallTheEndOfTheCallDoesNotResumeElsewhere() async {
        await playingAt50 { h in
            var route = RouteDriver(h)
            await h.send(.interruptionBegan)
            #expect(await route.send(.lost("headphones")) == .pause)
            #expect(await h.player.isPausedForLostOutput)
            await h.send(.interruptionEnded)  // PulseAudio sends none for a stream it moved; one would not resume
            #expect(await route.status == .paused)
            h.log.clear()
            #expect(await route.send(.returned("headphones")) == .resume)
            #expect(await route.status == .playing)
            #expect(await h.player.position == .seconds(50))
            #expect(interruptions(h.log) == [])  // the uncork ended the request: nothing muted is left
        }
    }

    @Test func theOutputBackAfterAnUnplugDuringTheCallResumesAndIsHeard() async {
        await playingAt50 { h in
            var route = RouteDriver(h)
            await h.send(.interruptionBegan)
            await route.send(.lost("headphones"))
            h.log.clear()
            // No uncork: the server forgot the request when it moved the stream, and left it muted.
            #expect(await route.send(.returned("headphones")) == .resume)
            #expect(await route.status == .playing)
            #expect(interruptions(h.log) == [.playingThrough])
        }
    }

    @Test func aCallDuringAnUnplugsPauseLeavesTheResumeToTheOutput() async {
        await playingAt50 { h in
            var route = RouteDriver(h)
            #expect(await route.send(.lost("headphones")) == .pause)
            await h.send(.interruptionBegan)  // PulseAudio asks only streams that play; a server may ask anyway
            #expect(await h.player.isPausedForLostOutput)
            await h.send(.interruptionEnded)
            #expect(await route.status == .paused)  // the output is still gone
            await route.send(.returned("headphones"))
            #expect(await route.status == .playing)
        }
    }

    @Test func theSoundServerLostDuringTheCallKeepsThePlaceAndStaysPaused() async {
        await playingAt50 { h in
            var route = RouteDriver(h)
            await h.send(.interruptionBegan)
            #expect(await route.send(.serverLost) == .nothing)
            #expect(await route.send(.serverReturned()) == .nothing)
            #expect(await route.status == .paused)
            h.reset()
            await h.player.play()
            #expect(h.engine.calls.first == .load(fileURL(0), at: .seconds(50)), "\(h.engine.calls)")
        }
    }

    @Test func theModesAreSpelledAsTheSettingSaysThem() {
        #expect(InterruptionMode.allCases.map(\.rawValue) == ["pause", "ignore"])
    }
}
