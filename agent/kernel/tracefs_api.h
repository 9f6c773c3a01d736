#pragma once
// The part of libtracefs (1.6) this agent uses, declared for C++. <tracefs.h> itself does not
// compile as C++ (an inline helper passes an int where an enum is expected), so the
// prototypes below are copied from it unchanged; the library is linked as usual.

#include <event-parse.h>  // libtraceevent: C++-safe (extern "C" guards)
#include <sched.h>

#include <cstddef>

extern "C" {
struct tracefs_instance;

const char* tracefs_tracing_dir(void);
struct tracefs_instance* tracefs_instance_create(const char* name);
struct tracefs_instance* tracefs_instance_alloc(const char* tracing_dir, const char* name);
int tracefs_instance_destroy(struct tracefs_instance* instance);
void tracefs_instance_free(struct tracefs_instance* instance);
int tracefs_instance_set_buffer_size(struct tracefs_instance* instance, size_t size, int cpu);
char* tracefs_instance_file_read(struct tracefs_instance* instance, const char* file, int* psize);
int tracefs_instance_file_write(struct tracefs_instance* instance, const char* file,
                                const char* str);
int tracefs_instance_file_append(struct tracefs_instance* instance, const char* file,
                                 const char* str);
int tracefs_trace_on(struct tracefs_instance* instance);
int tracefs_trace_off(struct tracefs_instance* instance);
int tracefs_event_enable(struct tracefs_instance* instance, const char* system, const char* event);
int tracefs_event_disable(struct tracefs_instance* instance, const char* system, const char* event);
struct tep_handle* tracefs_local_events_system(const char* tracing_dir,
                                               const char* const* sys_names);
int tracefs_iterate_raw_events(struct tep_handle* tep, struct tracefs_instance* instance,
                               cpu_set_t* cpus, int cpu_size,
                               int (*callback)(struct tep_event*, struct tep_record*, int, void*),
                               void* callback_context);
void tracefs_iterate_stop(struct tracefs_instance* instance);
}
