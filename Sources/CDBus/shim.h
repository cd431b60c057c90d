// libdbus-1, imported whole; the Swift layer in Sources/DBus wraps it.
#include <dbus/dbus.h>
// malloc_trim, which Swift's Glibc module leaves out: a connection gives the heap a burst of calls grew back to
// the system once it has handled them (glibc keeps freed pages of a fragmented heap otherwise).
#include <malloc.h>
