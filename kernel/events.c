#include "kernel/events.h"

struct event_row event_counts[NR_CPUS];

const char *const event_names[NR_EVENTS] = {
#define EVENT_NAME(id, name) [EV_##id] = name,
	EVENT_LIST(EVENT_NAME)
#undef EVENT_NAME
};

u64 event_sum(enum event e)
{
	u64 s = 0;
	for (unsigned c = 0; c < NR_CPUS; c++)
		s += READ_ONCE(event_counts[c].v[e]);
	return s;
}

void events_snapshot(u64 *out)
{
	for (int e = 0; e < NR_EVENTS; e++)
		out[e] = event_sum((enum event)e);
}
