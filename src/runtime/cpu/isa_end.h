// Closes the region isa_begin.h opened: what follows is compiled for the build's own target.
#if PTQ_ISA == 2
#pragma GCC diagnostic pop
#endif
#if PTQ_ISA != 0
#pragma GCC pop_options
#endif
