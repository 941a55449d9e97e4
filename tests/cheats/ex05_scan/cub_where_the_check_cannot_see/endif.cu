#endif   // the #if of plain_copy_if_it_sees_itself.cu
