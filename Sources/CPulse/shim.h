// libpulse (asynchronous API with the threaded main loop), imported whole; Sources/PulseAudio wraps it.
#include <pulse/pulseaudio.h>
